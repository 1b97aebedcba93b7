// SPDX-License-Identifier: Apache-2.0
#include <malloc.h>
#include "heap_in_use.h"

size_t heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}
