#!/usr/bin/env python3
"""Counts the public API of tunebank's library crates from rustdoc's JSON output.

Usage (from the repository root):

    RUSTC_BOOTSTRAP=1 RUSTDOCFLAGS="-Z unstable-options --output-format json" \
        cargo doc --workspace --all-features --no-deps
    python3 scripts/public-api.py target/doc/tunebank.json \
        target/doc/tunebank_{failure,key,model,pg,bank,measure,jobs,cli}.json [--max-items N]

Each crate is counted on its own (the root crate `tunebank` re-exports the others, which rustdoc
leaves out of its JSON, so nothing is counted twice) and the total is what `--max-items` bounds.

What is counted: every item reachable from the crate root through public modules and `pub use`
re-exports (what `cargo doc` shows), each once: free functions, structs, enums, traits (with
their associated items), constants, statics, type aliases, and the public inherent methods of
the structs and enums. Not counted: modules, enum variants, struct fields and trait impls.
Also printed: the items reachable under more than one public path, and the public functions
and methods that return `Result<_, String>`. With `--max-items N` the exit status is 1 when the
count is over N, when an item has two paths or when a public function returns a string error.
"""
import argparse
import collections
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("json", nargs="+", help="rustdoc JSON of each library crate")
    ap.add_argument("--max-items", type=int, help="fail when the total is over this")
    args = ap.parse_args()
    total, twice, string_results = 0, [], []
    for path in args.json:
        t, w, s = count(path)
        total += t
        twice += w
        string_results += s
    print("public items in all:", total)
    if args.max_items is not None:
        if total > args.max_items or twice or string_results:
            print(f"public-api: over the limit (at most {args.max_items} items, one path each, "
                  "typed errors)", file=sys.stderr)
            return 1
    return 0


def count(path):
    """The crate's public item count, its items with several paths and its string errors."""
    doc = json.load(open(path))
    index = doc["index"]

    def item(i):
        return index.get(str(i))

    def kind(it):
        return next(iter(it["inner"]))

    counts = collections.Counter()
    paths = collections.defaultdict(set)
    seen = set()
    string_results = []

    def returns_string_error(fn):
        out = fn["inner"]["function"]["sig"].get("output") or {}
        rp = out.get("resolved_path")
        if not rp or rp["path"] not in ("Result", "std::result::Result"):
            return False
        a = (rp.get("args") or {}).get("angle_bracketed", {}).get("args", [])
        return len(a) == 2 and '"String"' in json.dumps(a[1])

    def methods(it, path):
        k = kind(it)
        for impl_id in it["inner"][k].get("impls", []):
            impl = item(impl_id)
            if not impl:
                continue
            inner = impl["inner"]["impl"]
            if inner.get("trait") or inner.get("is_synthetic") or inner.get("blanket_impl"):
                continue
            for m in inner["items"]:
                mi = item(m)
                if mi and mi.get("visibility") == "public" and kind(mi) == "function":
                    counts["method"] += 1
                    if returns_string_error(mi):
                        string_results.append(path + "::" + mi["name"])

    def walk(i, path):
        it = item(i)
        if it is None:
            return
        k = kind(it)
        if k == "use":
            u = it["inner"]["use"]
            target = item(u["id"]) if u.get("id") is not None else None
            if target is None:
                return
            if u.get("is_glob"):
                if kind(target) == "module":
                    for child in target["inner"]["module"]["items"]:
                        walk(child, path)
                return
            walk(u["id"], path + [u["name"]])
            return
        name = it.get("name")
        p = path if path and path[-1] == name else path + ([name] if name else [])
        paths[str(it["id"])].add("::".join(p))
        if str(it["id"]) in seen:
            return
        seen.add(str(it["id"]))
        if k == "module":
            for child in it["inner"]["module"]["items"]:
                walk(child, p)
            return
        counts[k] += 1
        if k in ("struct", "enum", "union"):
            methods(it, "::".join(p))
        if k == "trait":
            counts["trait item"] += len(it["inner"]["trait"]["items"])
        if k == "function" and returns_string_error(it):
            string_results.append("::".join(p))

    walk(doc["root"], [])
    total = sum(v for k, v in counts.items() if k != "module")
    twice = sorted(sorted(ps) for ps in paths.values() if len(ps) > 1)
    print(f"{path}: public items:", total, dict(sorted(counts.items())))
    print("items with more than one public path:", len(twice))
    for ps in twice:
        print("   ", " = ".join(ps))
    print("public functions returning Result<_, String>:", len(string_results))
    for s in string_results:
        print("   ", s)
    return total, twice, string_results


if __name__ == "__main__":
    sys.exit(main())
