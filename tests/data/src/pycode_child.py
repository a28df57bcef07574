# SPDX-License-Identifier: Apache-2.0
# The child of tests/unit/test_pycode.c: prints where some code objects are and what they
# must read as, then stops itself (SIGSTOP) so that the test reads its memory.
#
#   version <sys.hexversion> <id(PyCode_Type)> <id of a str> <id of an int>
#   code <id(code)> <firstlineno> <unit> <line of that unit> <name as hex UTF-8> <filename hex>
#   (a name as the agent must show it: lone surrogates as U+FFFD)
#   ready
#
# name is co_qualname on 3.11+, co_name before; unit is the code unit of the last
# instruction with a line, and its line, from the interpreter's own decoder.
import dis
import os
import signal
import sys
import types


def plain(n):
    total = 0
    for i in range(n):
        total += i
    return total


class Holder:
    def method(self, x):
        return [y * 2 for y in range(x)]


def outer():
    def inner():
        return 1
    return inner


def renamed():
    return 2


def last_line(code):
    if sys.version_info >= (3, 10):
        best = None
        for start, end, line in code.co_lines():
            if line is not None and end > start:
                best = ((end - 2) // 2, line)
        return best
    starts = list(dis.findlinestarts(code))
    addr, line = starts[-1]
    return (len(code.co_code) - 2) // 2, line


def name_of(code):
    return getattr(code, "co_qualname", code.co_name)


def utf8(s):
    """s as UTF-8, a lone surrogate as U+FFFD (what the agent makes of one)."""
    return "".join("\ufffd" if 0xd800 <= ord(c) <= 0xdfff else c for c in s).encode().hex()


def main():
    codes = [plain.__code__, Holder.method.__code__, outer().__code__]
    fields = {"co_name": "grüße_名前_😀"}
    if sys.version_info >= (3, 11):
        fields["co_qualname"] = "grüße_名前_😀"
    codes.append(renamed.__code__.replace(co_filename="/tmp/ファイル.py", **fields))
    for other in ("grüße", "名前"):  # latin-1 and UCS-2 kinds (the one above is UCS-4)
        more = {"co_name": other}
        if sys.version_info >= (3, 11):
            more["co_qualname"] = other
        codes.append(renamed.__code__.replace(**more))
    lone = {"co_name": "bad\udcffname"}
    if sys.version_info >= (3, 11):
        lone["co_qualname"] = "bad\udcffname"
    codes.append(renamed.__code__.replace(**lone))
    codes.append(renamed.__code__.replace(co_name="x" * 2000, co_qualname="x" * 2000)
                 if sys.version_info >= (3, 11) else renamed.__code__.replace(co_name="x" * 2000))
    keep = codes  # alive while stopped
    text = "some str object"
    number = 123456789
    print("version", sys.hexversion, id(types.CodeType), id(text), id(number))
    for code in codes:
        unit, line = last_line(code)
        name = utf8(name_of(code))
        filename = utf8(code.co_filename)
        print("code", id(code), code.co_firstlineno, unit, line, name, filename)
    print("ready", flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)
    return keep, text, number


main()
