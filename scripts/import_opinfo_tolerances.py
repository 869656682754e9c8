#!/usr/bin/env python3
"""Regenerates the "overrides" section of oracles/default_policy.json from the
per-op, per-dtype tolerance overrides in the installed torch's OpInfo database.

  python3 scripts/import_opinfo_tolerances.py [--policy oracles/default_policy.json]
      [--check] [--list]

It imports torch.testing._internal.common_methods_invocations.op_db (which
includes torch/testing/_internal/opinfo/definitions/*.py), walks every OpInfo's
decorators (OpInfo folds `skips` into `decorators`) for toleranceOverride
(dtype -> tol(atol, rtol)) and precisionOverride (dtype -> atol), and keeps
those that bear on a CPU-vs-CUDA comparison of eager kernels:

  * op-level decorators (not wrapped in a DecorateInfo) and DecorateInfos with
    neither a test class nor a test name: every test of the op, every device;
  * DecorateInfos for every test (no test name) of TestCommon, TestConsistency,
    TestUnaryUfuncs or TestBinaryUfuncs, on cpu, cuda or any device: the
    op's kernel against a reference or another variant in every such test;
  * DecorateInfos for TestCommon.test_compare_cpu (CUDA against CPU).

It skips DecorateInfos for mps/xpu (and other devices), those for one named test
other than test_compare_cpu (test_noncontiguous_samples, test_variant_consistency_eager,
test_numpy_refs, test_reference_numerics_*, TestDecomp, TestInductorOpInfo, TestJit,
TestCompositeCompliance, TestOperators, TestMathBits, ...), inactive ones
(active_if false here), and dtypes the policy has no entry for (complex: their
parts' real entry would loosen real inputs too; complex32; bool).

Each OpInfo maps to "aten::<name>" for its name and aliases (nn.functional.X ->
X, special.X -> special_X, linalg.X -> linalg_X, fft.X -> fft_X; masked.* are
Python composites and have none), kept only where ops/generic_table.txt or
ops/catalogue.cc knows that ATen op (any overload: Policy::For falls back from
"aten::name.overload" to "aten::name"). Overrides for one op and dtype merge by
the largest atol and rtol, and never go below the policy's defaults (PyTorch
itself takes max(default, override) for each of atol and rtol).
"""
import argparse
import collections
import json
import os
import re
import sys
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RELEVANT_CLASSES = {None, "TestCommon", "TestConsistency", "TestUnaryUfuncs", "TestBinaryUfuncs"}
RELEVANT_TESTS = {"test_compare_cpu"}  # named tests that compare CUDA against CPU
RELEVANT_DEVICES = {None, "cpu", "cuda"}
DTYPE_NAMES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64"}
DTYPE_ORDER = ["f16", "bf16", "f32", "f64"]

# OpInfos whose ATen op is not "aten::" + the mapped name (or not only that).
EXTRA_ATEN = {
    "nn.functional.logsigmoid": ["log_sigmoid"],
    "nn.functional.rrelu": ["rrelu", "rrelu_with_noise"],
    "nn.functional.layer_norm": ["layer_norm", "native_layer_norm"],
    # torch.special.polygamma is the same kernel; OpInfo lists it under polygamma only.
    "polygamma": ["special_polygamma"],
}


def import_op_db():
    # torch's test utilities import expecttest (a test-only dependency) for its
    # TestCase base class; nothing here runs a test, so a stub will do.
    try:
        import expecttest  # noqa: F401
    except ImportError:
        stub = types.ModuleType("expecttest")
        stub.TestCase = type("TestCase", (unittest.TestCase,), {})
        sys.modules["expecttest"] = stub
    import torch
    from torch.testing._internal.common_device_type import precisionOverride, toleranceOverride
    from torch.testing._internal.common_methods_invocations import op_db
    from torch.testing._internal.opinfo import definitions
    from torch.testing._internal.opinfo.core import DecorateInfo

    # Which file defines each OpInfo (by identity).
    where = {}
    for mod_name in ("_masked", "fft", "linalg", "signal", "special", "sparse", "nested"):
        mod = getattr(definitions, mod_name, None)
        for op in getattr(mod, "op_db", []) or []:
            where[id(op)] = f"opinfo/definitions/{mod_name}.py"
    return torch, op_db, where, DecorateInfo, toleranceOverride, precisionOverride


def aten_names(name):
    if name.startswith("masked."):
        return []
    for prefix, repl in (("nn.functional.", ""), ("special.", "special_"), ("linalg.", "linalg_"),
                         ("fft.", "fft_")):
        if name.startswith(prefix):
            return [repl + name[len(prefix):]]
    return [name.replace(".", "_")]


def known_aten_ops():
    """Base names ("aten::name") of the ops divfuzz runs -> their qualified names."""
    known = collections.defaultdict(set)
    with open(os.path.join(ROOT, "ops", "generic_table.txt")) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                q = line.split()[0]
                known[q.split(".")[0]].add(q)
    with open(os.path.join(ROOT, "ops", "catalogue.cc")) as f:
        for m in re.finditer(r'Op\("(aten::[A-Za-z0-9_]+)",\s*"([A-Za-z0-9_]*)"', f.read()):
            known[m.group(1)].add(m.group(1) + ("." + m.group(2) if m.group(2) else ""))
    return known


def fmt_num(x):
    s = f"{x:g}"
    return s if float(s) == x else repr(x)


def describe(dec, precisionOverride):
    def dt(k):
        return str(k).replace("torch.", "")
    if isinstance(dec, precisionOverride):
        body = ", ".join(f"{dt(k)}: {fmt_num(v)}" for k, v in dec.d.items())
        return f"precisionOverride({{{body}}})"
    body = ", ".join(f"{dt(k)}: tol(atol={fmt_num(v.atol)}, rtol={fmt_num(v.rtol)})"
                     for k, v in dec.d.items())
    return f"toleranceOverride({{{body}}})"


def scope(di):
    if di is None:
        return "all tests (op-level decorator)"
    if di.cls_name is None and di.test_name is None:
        s = "all tests"
    elif di.test_name is None:
        s = f"{di.cls_name} (all tests)"
    else:
        s = f"{di.cls_name or '*'}.{di.test_name}"
    return s + (f" on {di.device_type}" if di.device_type else "")


def collect(defaults):
    torch, op_db, where, DecorateInfo, toleranceOverride, precisionOverride = import_op_db()
    found = []  # every override in the database: (opinfo, di or None, decorator)
    for op in op_db:
        seen = set()
        for item in getattr(op, "decorators", ()) or ():
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, (toleranceOverride, precisionOverride)):
                found.append((op, None, item))
            elif isinstance(item, DecorateInfo):
                for dec in item.decorators:
                    if isinstance(dec, (toleranceOverride, precisionOverride)):
                        found.append((op, item, dec))

    known = known_aten_ops()
    entries = {}  # "aten::name" -> {dtype: [rtol, atol]}
    sources = collections.defaultdict(list)
    report = collections.Counter()
    for op, di, dec in found:
        if di is not None:
            if di.device_type not in RELEVANT_DEVICES:
                report["skipped: other device (mps, xpu, ...)"] += 1
                continue
            if not (di.test_name is None and di.cls_name in RELEVANT_CLASSES) and \
                    di.test_name not in RELEVANT_TESTS:
                report[f"skipped: one named test or another suite ({di.cls_name})"] += 1
                continue
            if not bool(di.active_if):
                report["skipped: inactive here (active_if)"] += 1
                continue
        names = [op.name] + [a.name for a in getattr(op, "aliases", ()) or ()]
        keys = {}  # "aten::name" -> the alias it came through, or None
        for n in names:
            for base in aten_names(n) + EXTRA_ATEN.get(n, []):
                k = "aten::" + base
                if k in known and k not in keys:
                    keys[k] = n if n != op.name else None
        if not keys:
            report["skipped: no ATen op divfuzz runs"] += 1
            print(f"  no ATen op for OpInfo {op.name}: {describe(dec, precisionOverride)}",
                  file=sys.stderr)
            continue
        changed = False
        for torch_dtype, value in dec.d.items():
            d = DTYPE_NAMES.get(str(torch_dtype).replace("torch.", ""))
            if d is None or (di is not None and di.dtypes is not None and
                             torch_dtype not in di.dtypes):
                continue
            if isinstance(dec, precisionOverride):
                rtol, atol = 0.0, float(value)
            else:
                rtol, atol = float(value.rtol), float(value.atol)
            rtol = max(rtol, defaults[d]["rtol"])
            atol = max(atol, defaults[d]["atol"])
            if (rtol, atol) == (defaults[d]["rtol"], defaults[d]["atol"]):
                continue  # no looser than the default: nothing to import
            for k in keys:
                cur = entries.setdefault(k, {}).get(d, [0.0, 0.0])
                entries[k][d] = [max(cur[0], rtol), max(cur[1], atol)]
            changed = True
        if not changed:
            report["skipped: only complex/bool dtypes or no looser than the defaults"] += 1
            continue
        report["imported"] += 1
        variant = f" ({op.variant_test_name})" if op.variant_test_name else ""
        src_file = where.get(id(op), "common_methods_invocations.py")
        for k, alias in keys.items():
            via = f" (alias {alias})" if alias else ""
            text = (f"OpInfo {op.name}{variant}{via}: {describe(dec, precisionOverride)} for "
                    f"{scope(di)}, torch {torch.__version__.split('+')[0]} {src_file}")
            if text not in sources[k]:
                sources[k].append(text)
    return torch, found, entries, sources, report


def render_overrides(entries, sources, indent="  "):
    if not entries:
        return "{}"
    lines = ["{"]
    keys = sorted(entries)
    for i, k in enumerate(keys):
        lines.append(f"{indent * 2}{json.dumps(k)}: {{")
        lines.append(f"{indent * 3}\"_source\": {json.dumps('; '.join(sources[k]))},")
        ds = [d for d in DTYPE_ORDER if d in entries[k]]
        for j, d in enumerate(ds):
            rtol, atol = entries[k][d]
            comma = "," if j + 1 < len(ds) else ""
            lines.append(f"{indent * 3}\"{d}\": {{\"rtol\": {fmt_num(rtol)}, "
                         f"\"atol\": {fmt_num(atol)}}}{comma}")
        lines.append(f"{indent * 2}}}" + ("," if i + 1 < len(keys) else ""))
    lines.append(indent + "}")
    return "\n".join(lines)


def splice(text, key, new_value, insert_before=None):
    """Replaces the top-level key's value in text (keeping the rest byte for byte),
    or inserts `"key": value,` on a line of its own before insert_before's line."""
    m = re.search(r'^  "' + re.escape(key) + r'":\s*', text, re.M)
    if m:
        _, end = json.JSONDecoder().raw_decode(text, m.end())
        return text[:m.end()] + new_value + text[end:]
    m = re.search(r'^  "' + re.escape(insert_before) + r'":', text, re.M)
    return text[:m.start()] + f'  "{key}": {new_value},\n' + text[m.start():]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", default=os.path.join(ROOT, "oracles", "default_policy.json"))
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if the file differs from what would be written")
    ap.add_argument("--list", action="store_true", help="print every override found")
    args = ap.parse_args()

    with open(args.policy) as f:
        text = f.read()
    policy = json.loads(text)
    torch, found, entries, sources, report = collect(policy["defaults"])
    version = torch.__version__.split("+")[0]
    if args.list:
        _, _, _, _, _, precisionOverride = import_op_db()
        for op, di, dec in found:
            print(f"{op.name}{'.' + op.variant_test_name if op.variant_test_name else ''}: "
                  f"{describe(dec, precisionOverride)} for {scope(di)}")
    doc = (f"overrides: imported by scripts/import_opinfo_tolerances.py from torch {version}'s "
           "OpInfo database (common_methods_invocations.py, opinfo/definitions/*.py): "
           "toleranceOverride/precisionOverride of op-level decorators, of all tests of "
           "TestCommon/TestConsistency/TestUnaryUfuncs/TestBinaryUfuncs and of "
           "TestCommon.test_compare_cpu, on cpu, cuda or any device; merged by the largest "
           "atol and rtol, never below 'defaults'. '_source' names each entry's origin.")
    out = splice(text, "_overrides_source", json.dumps(doc), insert_before="overrides")
    out = splice(out, "overrides", render_overrides(entries, sources))
    json.loads(out)  # still one JSON object

    n_pairs = sum(len(v) for v in entries.values())
    print(f"torch {version}: {len(found)} tolerance/precision overrides in "
          f"{len({id(op) for op, _, _ in found})} OpInfos; imported {report['imported']} "
          f"as {n_pairs} (op, dtype) entries over {len(entries)} ATen ops", file=sys.stderr)
    for k, v in sorted(report.items()):
        print(f"  {k}: {v}", file=sys.stderr)
    if args.check:
        sys.exit(0 if out == text else 1)
    if out != text:
        with open(args.policy, "w") as f:
            f.write(out)
        print(f"wrote {args.policy}", file=sys.stderr)


if __name__ == "__main__":
    main()
