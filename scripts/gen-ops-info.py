#!/usr/bin/env python3
"""Embeds the facts key resolution reads from CANN's per-SoC op information into the crate.

Usage (from the repository root):

    python3 scripts/gen-ops-info.py [FOLDER]

FOLDER holds CANN's `aic-<family>-ops-info.json(.gz)` files (default:
`../shared/data/ascend/ops_info`, the public copy of CANN 8.1's
`opp/built-in/op_impl/ai_core/tbe/config/<family>/`). Writes, replacing what was there,
`crates/key/src/platform/cann81/ops_info.tsv`: one line per op type that has a `precision_reduce` flag
or an `sgatKeyAttr` list, or that is the `D` variant of another op type (`ApplyAdamD` beside
`ApplyAdam`: the kernel ATC compiles when the op's constant inputs become attributes), in each
family:

    <family> TAB <op type> TAB <true|false|-> TAB <attr,attr,...|-> TAB <type[=default];...|-> TAB <attr,...|->

The fifth field holds, for each `sgatKeyAttr` attribute in the fourth's order, the attribute's
`attr_<name>.type` (`bool`, `int`, `float`, `str`, `listInt` ...) and, when the op information
gives one, `=` and its `defaultValue` as written there (`listInt=[1,1,1,1]`, `int=0`); `-` when
the list is empty. An attribute the op information does not declare has type `-`. The sixth
field names the attributes the op information declares (`attr.list`) that are not in
`sgatKeyAttr` (Conv2D's `data_format`), when the list is not empty; `-` otherwise.

`<family>` is the file's (`ascend910b`, ...), which is a SoC's `Short_SoC_version` in lower case.
An op type absent from a family's lines has neither fact there (ATC's gray list, no key
attributes) and is no `D` variant. Lines are sorted; rerunning on the same input writes the same bytes.
"""
import gzip
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "crates", "key", "src", "platform", "cann81", "ops_info.tsv")


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def kind(info, file, attr):
    """`type` or `type=default` of one key attribute, from its `attr_<name>` entry."""
    a = info.get("attr_" + attr)
    if a is None:
        return "-"
    t = a.get("type", "-")
    d = a.get("defaultValue")
    text = t if d is None else f"{t}={d}"
    if any(c in text for c in "\t\n;"):
        sys.exit(f"gen-ops-info: {file}: attribute {attr!r} has a tab, newline or ';' in {text!r}")
    return text


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "data", "ascend", "ops_info")
    rows = []
    files = sorted(f for f in os.listdir(src) if re.fullmatch(r"aic-(.+)-ops-info\.json(\.gz)?", f))
    if not files:
        sys.exit(f"gen-ops-info: no aic-<family>-ops-info.json files in {src}")
    for name in files:
        family = re.fullmatch(r"aic-(.+)-ops-info\.json(\.gz)?", name).group(1)
        ops = load(os.path.join(src, name))
        for op, info in ops.items():
            flag = (info.get("precision_reduce") or {}).get("flag")
            attrs = (info.get("sgatKeyAttr") or {}).get("list", "")
            names = [a.strip() for a in attrs.split(",") if a.strip()]
            attrs = ",".join(names)
            kinds = ";".join(kind(info, name, a) for a in names)
            declared = [a.strip() for a in (info.get("attr") or {}).get("list", "").split(",") if a.strip()]
            rest = ",".join(a for a in declared if a not in names) if names else ""
            if flag not in ("true", "false"):
                flag = None
            d_variant = op.endswith("D") and op[:-1] in ops
            if flag is None and not attrs and not d_variant:
                continue
            if "\t" in op or "\n" in op:
                sys.exit(f"gen-ops-info: {name}: op type {op!r} has a tab or newline")
            rows.append((family, op, flag or "-", attrs or "-", kinds or "-", rest or "-"))
    rows.sort()
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        for r in rows:
            f.write("\t".join(r) + "\n")
    print(f"gen-ops-info: {len(rows)} lines from {len(files)} files in {src}")


if __name__ == "__main__":
    main()
