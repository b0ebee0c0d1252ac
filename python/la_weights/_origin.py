# SPDX-License-Identifier: BSD-3-Clause
"""_origin.py: the directories this package's libla_client may be in,
judged from where the package itself came from.

  - installed by `make install`: the LIBDIR it recorded (_installed.py);
  - pip-installed from a source tree (`pip install python/`): that tree's
    build/lib, read from the source directory pip recorded in the
    package's dist-info (direct_url.json, PEP 610);
  - run in place from a checkout (python/ on sys.path): ../build/lib.
"""

import glob
import json
import os
import urllib.parse
import urllib.request

from . import _installed

_HERE = os.path.dirname(os.path.abspath(__file__))


def _pip_source():
    """The local directory pip installed this package from, or None. The
    dist-info read is the one beside this package, not another install of
    the same name earlier on sys.path."""
    site = os.path.dirname(_HERE)
    for info in sorted(glob.glob(os.path.join(site,
                                              "la_weights-*.dist-info"))):
        try:
            with open(os.path.join(info, "direct_url.json")) as f:
                url = json.load(f).get("url", "")
        except (OSError, ValueError, AttributeError):
            continue
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "file":
            return urllib.request.url2pathname(parts.path)
    return None


def libdirs():
    """Directories to look in, most specific first."""
    out = []
    if _installed.LIBDIR:
        out.append(_installed.LIBDIR)
    src = _pip_source()
    if src:
        out.append(os.path.join(src, "..", "build", "lib"))
    out.append(os.path.join(_HERE, "..", "..", "build", "lib"))
    return [os.path.normpath(d) for d in out]
