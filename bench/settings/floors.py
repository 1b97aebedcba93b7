# SPDX-License-Identifier: Apache-2.0
"""The floors the settings benchmarks compare the app with: minimal GTK 4
and libadwaita windows (minimal-window.c, minimal-preferences.c) compiled
into a directory of the run."""
import os
import subprocess


def compile_floor(name, package, directory):
    """Compiles `name`.c beside this file against pkg-config's `package` into `directory`."""
    output = os.path.join(directory, name)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", package], capture_output=True, text=True, check=True).stdout.split()
    subprocess.run(["gcc", "-O2", "-o", output, os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".c"), *flags],
                   check=True)
    return output
