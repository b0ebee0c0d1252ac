# SPDX-License-Identifier: BSD-3-Clause
"""_installed.py: the directory `make install` put libla_client in.

None in the source tree; `make install` writes this file beside the
package it installs, with its LIBDIR (as installed, without DESTDIR), so
the installed package loads the library installed with it.
"""

LIBDIR = None
