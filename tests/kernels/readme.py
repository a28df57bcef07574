#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""readme.py TABLE README: put TABLE (build/tests/kernels/kernels.md, written by
tests/integration/test_kernels.py) between README's kernels markers (`make kernels-readme`)."""
import re
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    table_path, readme_path = sys.argv[1:]
    try:
        with open(table_path) as f:
            table = f.read().strip()
    except OSError as e:
        sys.exit(f"{table_path}: {e.strerror}: run make test-kernels first")
    if table.count("\n") < 2:
        sys.exit(f"{table_path} has no kernel rows: run make test-kernels first")
    with open(readme_path) as f:
        readme = f.read()
    block = re.compile(r"(<!-- kernels:start -->\n)(?:.*?\n)?(<!-- kernels:end -->)", re.S)
    if not block.search(readme):
        sys.exit(f"{readme_path} has no <!-- kernels:start --> ... <!-- kernels:end --> block")
    new = block.sub(lambda m: m.group(1) + table + "\n" + m.group(2), readme)
    if new != readme:
        with open(readme_path, "w") as f:
            f.write(new)
    print(f"  README   the Verified on table ({table.count(chr(10)) - 1} kernels)")


if __name__ == "__main__":
    main()
