// SPDX-License-Identifier: Apache-2.0
// GnuTLS for useractivity-handoffd's identity: key generation, a self-signed
// certificate, its SPKI SHA-256. Only what Swift cannot take directly.
#pragma once
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <gnutls/crypto.h>

// GNUTLS_KEYID_USE_SHA256 and GNUTLS_CURVE_TO_BITS are macros.
static const unsigned int CGNUTLS_KEYID_USE_SHA256 = GNUTLS_KEYID_USE_SHA256;
static inline unsigned int cgnutls_curve_bits(gnutls_ecc_curve_t curve) { return GNUTLS_CURVE_TO_BITS(curve); }
// gnutls_free is a macro over a function pointer variable.
static inline void cgnutls_free(void *pointer) { gnutls_free(pointer); }
