#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench-overhead.sh: `make bench-overhead` (see bench-overhead.py).
exec python3 "$(dirname "$0")/bench-overhead.py" "$(dirname "$0")/../build/bench/overhead.json"
