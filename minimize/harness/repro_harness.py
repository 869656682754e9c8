# divfuzz-harness begin header
# The generic part of every divfuzz repro.py: minimize/emit_python.cc embeds
# this file at build time and emits it below the program part, as one
# standalone script. It replaces each block between the lines
# "divfuzz-harness begin NAME" and "divfuzz-harness end NAME" (minimize/
# harness_text.h): header with the script's comment header, program with the
# program's constants, make_inputs() and program(), and constants with the
# numbers of the policy in effect (oracles::Policy) and the other constants
# declared once in C++ (minimize/harness_text.h). What stands in those blocks
# here only keeps this file importable and lint-clean (the ctest
# minimize_repro_harness_py imports it and runs pyflakes on it).
# divfuzz-harness end header
import argparse
import math
import os
import platform
import sys
import traceback

import torch

aten = torch.ops.aten


# divfuzz-harness begin exact
def F(h):
    """float.fromhex, and every NaN bit for bit: '-nan_0xfe00000000000' is the NaN
    with the sign bit set and that float64 fraction (docs/FORMAT.md)."""
    if 'nan_0x' in h.lower():
        import struct
        bits = (h[0] == '-') << 63 | 0x7ff << 52 | int(h.lower().split('nan_0x')[1], 16)
        return struct.unpack('<d', struct.pack('<Q', bits))[0]
    return float.fromhex(h)


def _cast(t, dtype):
    """t (float64 or complex128) as dtype, every NaN keeping its sign and the top
    fraction bits dtype has, quiet bit set, as divfuzz builds inputs (torch's
    bfloat16 cast writes 0x7fc0 or 0xffff for a NaN whatever its sign)."""
    out = t.to(dtype)
    fmt = {torch.float32: (23, 8, torch.int32), torch.complex64: (23, 8, torch.int32),
           torch.float16: (10, 5, torch.int16), torch.bfloat16: (7, 8, torch.int16)}.get(dtype)
    src = torch.view_as_real(t) if t.is_complex() else t
    if fmt is None or src.dtype != torch.float64 or not bool(src.isnan().any()):
        return out
    frac, exp, itype = fmt
    width = 1 + exp + frac
    b = src.contiguous().view(torch.int64)
    b = (((b >> 63) & 1) << (width - 1) | ((1 << exp) - 1) << frac
         | (b & ((1 << 52) - 1)) >> (52 - frac) | 1 << (frac - 1))
    b = torch.where(b >= 1 << (width - 1), b - (1 << width), b).to(itype)
    dst = torch.view_as_real(out) if out.is_complex() else out
    nan = src.isnan()
    dst[nan] = b.view(dst.dtype)[nan]
    return out


# divfuzz-harness end exact

# divfuzz-harness begin program
TITLE = 'the harness alone'
TARGET_A = 'cpu'
TARGET_B = 'cpu-f64'
NODE = 0
OUTPUT = 0
VALUE = 'out'
OP = 'aten::none'
SEEN = ''
RERUN = None
RUNS = 1
RERUN_SECONDS = 1
ATTEMPTS = 1
FAILURE = None
FAILURE_TARGET = ''
HANG_SECONDS = 1
INVARIANTS = None
NAN_RULE = None
# divfuzz's exact witness at the diverging element (MPFR at 160 bits or exact
# rationals, rounded once), from each side's own inputs: {target: value}.
EXACT_ELEMENT = -1
EXACT = {}
GUARDED = ()  # nodes whose op must leave its inputs as they were (linear algebra)
# Gradient statements (autograd::grad): the inputs they differentiate against
# (they require grad from the start), whether NODE is one, and the backward
# kernel where divfuzz saw the sides part.
WRT = ()
GRADIENT = False
BACKWARD = ''
BACKEND = ''
LAYOUTS = {}


def make_inputs():
    return {}


def program(v, node):
    pass


# divfuzz-harness end program
# ---------------------------------------------------------------------------
# The harness below is the same in every divfuzz repro; the program is above.

# divfuzz-harness begin constants
TOLERANCES = {}  # dtype: (rtol, atol)
TARGETS = ()
FLOAT_BITS = {}  # dtype: (mantissa bits, exponent of the smallest subnormal)
CUDA_FAULTS = ()
PERTURB_BYTES = (0, 0)
DTYPE_GAPS = ()
MALLOC_CACHE_OFF = 'STAND_IN'
NO_MALLOC_CACHE = ''
START_SECONDS = 0
POLL_SECONDS = 1.0
EXACT_LIMIT = 1
INPUT_WRITTEN = 'wrote into its input'
SWITCHES = {}  # CUDA switch: (library, Python statements)
# divfuzz-harness end constants


# divfuzz-harness begin floats
def _floats(hexes, shape, dtype):
    return _cast(torch.tensor([F(h) for h in hexes], dtype=torch.float64), dtype).reshape(shape)


# divfuzz-harness end floats
# divfuzz-harness begin ints
def _ints(values, shape, dtype):
    return torch.tensor(values, dtype=torch.int64).to(dtype).reshape(shape)


# divfuzz-harness end ints
# divfuzz-harness begin complex
def _complex(hexes, shape, dtype):
    parts = torch.tensor([F(h) for h in hexes], dtype=torch.float64).reshape(-1, 2)
    return _cast(torch.view_as_complex(parts), dtype).reshape(shape)


# divfuzz-harness end complex
# divfuzz-harness begin layout
def _layout(t, layout):
    """An input in the memory layout the program names: same values."""
    if layout == 'transposed' and t.dim() >= 2:
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if layout == 'strided' and t.dim() >= 1:
        big = torch.zeros(tuple(t.shape[:-1]) + (2 * t.shape[-1],), dtype=t.dtype,
                          device=t.device)
        view = big[..., ::2]
        view.copy_(t)
        return view
    if layout == 'channels_last' and t.dim() == 4:
        return t.contiguous(memory_format=torch.channels_last)
    return t


# divfuzz-harness end layout
# divfuzz-harness begin grad
def _grad(outputs, inputs, cotangents, create_graph):
    """A gradient statement as divfuzz runs it: torch.autograd.grad of the
    outputs that require grad, with their cotangents, allow_unused, zeros for an
    input no output reaches; create_graph when a later statement differentiates
    these gradients again (second order). One gradient per input, in order."""
    ys, vs = [], []
    for y, c in zip(outputs, cotangents):
        if isinstance(y, torch.Tensor) and y.requires_grad:
            ys.append(y)
            vs.append(c.detach())
    grads = [None] * len(inputs)
    if ys:
        grads = torch.autograd.grad(ys, inputs, vs, retain_graph=True, create_graph=create_graph,
                                    allow_unused=True)
    return [g if g is not None else torch.zeros_like(x.detach()) for g, x in zip(grads, inputs)]


# divfuzz-harness end grad
class Failure:
    """Stands in for the results of a node that raised (or whose inputs did)."""

    def __init__(self, message, node):
        self.message = message
        self.node = node

    def __str__(self):
        return 'raised at node %d: %s' % (self.node, self.message)


def _snapshot(x):
    if isinstance(x, Failure):
        return x
    if isinstance(x, list):
        snaps = [_snapshot(e) for e in x]
        failed = [e for e in snaps if isinstance(e, Failure)]
        return failed[0] if failed else snaps
    if isinstance(x, torch.Tensor):
        return x.detach().clone().cpu()
    if isinstance(x, (bool, int, float, complex)):
        return torch.tensor(x)
    return Failure('output of type %s is not a tensor' % type(x).__name__, NODE)


def _upcast(t):
    if t.is_complex():
        return t.to(torch.complex128)
    if t.is_floating_point():
        return t.to(torch.float64)
    return t


REFERENCES = {}  # target -> the diverging node in float64 from that target's own inputs
WHOLE_F64 = []  # a gradient statement's reference: the whole program in float64, once


def _pick(out, results):
    """The diverging result of a node's return value (a decomposition: all of them)."""
    if isinstance(out, Failure):
        return out
    values = [out] if len(results) == 1 else list(out)
    if len(values) != len(results):
        return Failure('returned %d results, the program names %d' % (len(values), len(results)),
                       NODE)
    return values if INVARIANTS else values[OUTPUT]


def _reference(v, results, uses, fn):
    """The oracle's reference for the diverging node: the node rerun on the CPU
    in float64 from this side's own inputs (so a side is not blamed for
    rounding it inherited from earlier nodes)."""
    saved = {u: v[u] for u in uses}
    try:
        for u in uses:
            if isinstance(v[u], torch.Tensor):
                v[u] = _upcast(v[u].detach().cpu()).clone()
        ref = _snapshot(_pick(fn(), results))
        if NAN_RULE is not None and isinstance(ref, torch.Tensor) and ref.is_floating_point():
            # PyTorch's kernel returns an unset variable there (divfuzz's
            # oracles/nan_rule.h): the reference says NaN, as it should.
            x, n = (torch.as_tensor(a).detach().cpu().to(torch.float64) for a in NAN_RULE(v))
            nan = torch.isnan(x) & (n >= 1)
            if nan.shape == ref.shape:
                ref = torch.where(nan, torch.full_like(ref, float('nan')), ref)
        return ref
    except Exception as e:  # noqa: BLE001 -- the reference may raise too
        return Failure('%s: %s' % (type(e).__name__, str(e).strip()), NODE)
    finally:
        v.update(saved)


def _whole_f64():
    """A gradient statement cannot run alone: its float64 reference is the
    whole program run in float64 (cpu-f64) from the same inputs, for every side."""
    if not WHOLE_F64:
        WHOLE_F64.append(run('cpu-f64'))
    return WHOLE_F64[0]


def run(target):
    """Runs the program on one target; returns the diverging output as a CPU
    tensor, or a Failure when that node (or one it depends on) raised. For cpu
    and cuda it also records the node's float64 reference in REFERENCES.
    Inputs in WRT require grad (after their layout, as divfuzz's executor
    does), and a program with gradient statements runs with autograd on."""
    if target == 'cpu-scalar':
        return _run_in_child('cpu', {'ATEN_CPU_CAPABILITY': 'default'})
    device = 'cuda' if target == 'cuda' else 'cpu'
    v = make_inputs()
    for name in list(v):
        t = _upcast(v[name]) if target == 'cpu-f64' else v[name]
        v[name] = _layout(t.to(device), LAYOUTS.get(name))
        if name in WRT:
            v[name] = v[name].detach().requires_grad_()
    captured = {}

    def node(index, results, uses, fn):
        failed = [v[u] for u in uses if isinstance(v.get(u), Failure)]
        if failed:
            out = failed[0]
        else:
            if index == NODE and target in ('cpu', 'cuda'):
                REFERENCES[target] = _whole_f64() if GRADIENT else _reference(v, results, uses,
                                                                               fn)
            try:
                kept = [(u, v[u].detach().clone()) for u in uses if index in GUARDED and
                        isinstance(v.get(u), torch.Tensor) and v[u].numel() and
                        (v[u].is_floating_point() or v[u].is_complex())]
                out = fn()
                if device == 'cuda':
                    torch.cuda.synchronize()
                for u, before in kept:
                    if not same_bits(before, v[u].detach())[0]:
                        with torch.no_grad():  # the nodes after it read what the program made
                            v[u].detach().copy_(before)
                        raise RuntimeError('%s %%%s, which its schema does not declare mutable'
                                           % (INPUT_WRITTEN, u))
            except Exception as e:  # noqa: BLE001 -- every error is a result here
                out = Failure('%s: %s' % (type(e).__name__, str(e).strip()), index)
        if isinstance(out, Failure):
            values = [out] * len(results)
        elif len(results) == 1:
            values = [out]
        else:
            values = list(out)
            if len(values) != len(results):
                msg = 'returned %d results, the program names %d' % (len(values), len(results))
                values = [Failure(msg, index)] * len(results)
        for name, value in zip(results, values):
            v[name] = value
        if index == NODE:
            captured['value'] = _snapshot(values if INVARIANTS else values[OUTPUT])

    with torch.enable_grad() if WRT else torch.no_grad():
        program(v, node)
    return captured.get('value', Failure('the node did not run', NODE))


def _run_in_child(target, env):
    """Runs a target in a fresh process (e.g. with ATen's scalar CPU kernels)."""
    import subprocess
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'result.pt')
        child_env = dict(os.environ, **env)
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), '--child', target, path],
                              env=child_env)
        if proc.returncode != 0 or not os.path.exists(path):
            return Failure('child process exited with status %d' % proc.returncode, NODE)
        saved = torch.load(path)
    if 'error' in saved:
        return Failure(saved['error'], saved['node'])
    return saved['value']


def _child(target, path):
    open(path + '.started', 'w').close()
    r = run(target)
    if isinstance(r, Failure):
        torch.save({'error': r.message, 'node': r.node}, path)
    else:
        torch.save({'value': r}, path)
    return 0


def _dtype_of(r):
    if isinstance(r, torch.Tensor):
        return r.dtype
    if isinstance(r, list):
        return [x.dtype for x in r]
    return None


def _to(r, want):
    if isinstance(r, torch.Tensor) and want is not None:
        return r.to(want)
    if isinstance(r, list) and isinstance(want, list) and len(want) == len(r):
        return [x.to(w) for x, w in zip(r, want)]
    return r


def _cast_back(results, targets):
    """cpu-f64 results are rounded back to the program's dtype: the dtype the
    plain run of the node produced."""
    want = None
    for t in targets:
        if t != 'cpu-f64' and _dtype_of(results[t]) is not None:
            want = _dtype_of(results[t])
            break
    if want is None:
        want = _dtype_of(run('cpu'))
    for t in targets:
        if t == 'cpu-f64':
            results[t] = _to(results[t], want)


def comparable(outs):
    """What is compared of the node's outputs: the outputs themselves, or for a
    decomposition its invariants (computed in float64, rounded back), since
    factors are free up to sign or phase. As divfuzz's oracle does."""
    if not INVARIANTS or not isinstance(outs, list):
        return outs
    dtype = outs[0].dtype
    f = [t.to(torch.float64) if not t.is_complex() else t.to(torch.complex128) for t in outs]
    if INVARIANTS == 'qr':  # Q R = A, and |diag(R)| is unique
        inv = [f[1].diagonal(0, -2, -1).abs(), f[0].matmul(f[1])]
    elif INVARIANTS == 'svd':  # U diag(S) Vh = A, and S is unique
        inv = [f[1], f[0].mul(f[1].unsqueeze(-2)).matmul(f[2])]
    elif INVARIANTS == 'svd_v':  # torch.svd: V, and U and V may be complete
        k = f[1].shape[-1]
        inv = [f[1], f[0][..., :k].mul(f[1].unsqueeze(-2)).matmul(f[2][..., :k].mH)]
    elif INVARIANTS == 'eigh':  # V diag(w) V^T = sym(A), and w is unique
        inv = [f[0], f[1].mul(f[0].unsqueeze(-2)).matmul(f[1].mT)]
    elif INVARIANTS == 'lu':  # P L U = A
        inv = [f[0].matmul(f[1]).matmul(f[2])]
    elif INVARIANTS == 'eig':  # the spectrum as a multiset
        w = outs[0].to(torch.complex128)
        part = torch.float32 if dtype == torch.complex64 else torch.float64
        return [w.real.sort(-1)[0].to(part).contiguous(), w.imag.sort(-1)[0].to(part).contiguous()]
    else:
        return outs
    return [t.to(dtype).contiguous() for t in inv]


def _classes(t):
    """Per real element: 0 finite, 1 +inf, 2 -inf, 3 nan."""
    c = torch.zeros(t.shape, dtype=torch.int8)
    c[t == math.inf] = 1
    c[t == -math.inf] = 2
    c[torch.isnan(t)] = 3
    return c


def _parts(t):
    """Real view: complex tensors as their real and imaginary parts, in float64."""
    if t.is_complex():
        return torch.view_as_real(t.resolve_conj().to(torch.complex128)).reshape(-1)
    return t.to(torch.float64).reshape(-1)


def _at(t, flat, part_index):
    """Element `flat` of t, printed with its exact hex value."""
    e = t.reshape(-1)[flat].item()
    if isinstance(e, complex):
        return '%r (%s, %s)' % (e, e.real.hex(), e.imag.hex())
    if isinstance(e, float):
        return '%r (%s)' % (e, e.hex())
    return repr(e)


def compare(a, b, name_a, name_b):
    """The oracle's rules for one output, in order. Returns (class, detail,
    flat index into the real view or None); class None means no divergence."""
    if isinstance(a, list) and isinstance(b, list):
        for k, (x, y) in enumerate(zip(a, b)):
            cls, detail, where = compare(x, y, name_a, name_b)
            if cls is not None:
                return cls, 'invariant %d of the decomposition: %s' % (k, detail), (k, where)
        return None, 'every invariant of the decomposition agrees', None
    fa, fb = isinstance(a, Failure), isinstance(b, Failure)
    if fa and fb:
        return None, 'both targets raised', None
    if fa or fb:
        side, f = (name_a, a) if fa else (name_b, b)
        cls = 'dtype_gap' if any(g in f.message for g in DTYPE_GAPS) else 'error_split'
        return cls, 'only %s raised: %s' % (side, f.message), None
    if a.shape != b.shape or a.dtype != b.dtype:
        return 'meta_split', '%s: %s %s, %s: %s %s' % (name_a, a.dtype, list(a.shape), name_b,
                                                       b.dtype, list(b.shape)), None
    if a.is_floating_point() or a.is_complex():
        per = 2 if a.is_complex() else 1
        pa, pb = _parts(a), _parts(b)
        ca, cb = _classes(pa), _classes(pb)
        differ = (ca != cb).nonzero()
        if len(differ):
            i = int(differ[0])
            return 'class_split', 'element %d: %s %s, %s %s' % (
                i // per, name_a, _at(a, i // per, i % per), name_b, _at(b, i // per, i % per)), i
        rtol, atol = TOLERANCES[a.dtype]
        finite = ca == 0  # the classes agree: both sides finite there
        err = torch.where(finite, (pa - pb).abs(), torch.zeros_like(pa))
        allowed = atol + rtol * pb.abs()
        bad = (finite & (err > allowed)).nonzero()
        if len(bad):
            i = int(bad[0])
            return 'tolerance', ('element %d: %s %s, %s %s, |a-b| = %r > %r = atol %r + rtol %r * |b|'
                                 % (i // per, name_a, _at(a, i // per, i % per), name_b,
                                    _at(b, i // per, i % per), err[i].item(), allowed[i].item(),
                                    atol, rtol)), i
        return None, 'equal within rtol %r, atol %r (max |a-b| = %r)' % (
            rtol, atol, err.max().item() if err.numel() else 0.0), None
    if not torch.equal(a, b):
        i = int((a.reshape(-1) != b.reshape(-1)).nonzero()[0])
        return 'exact_mismatch', 'element %d: %s %s, %s %s' % (i, name_a, _at(a, i, 0), name_b,
                                                               _at(b, i, 0)), i
    return None, 'exactly equal', None


def _cpu_name():
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cuda_library_versions():
    """cuBLAS and cuSOLVER as loaded (asked through their GetProperty calls),
    and the driver: (cublas, cusolver, driver), each None when unknown."""
    import ctypes
    found = {}
    try:
        with open('/proc/self/maps') as f:
            for line in f:
                path = line.split()[-1]
                base = os.path.basename(path)
                for lib in ('libcublas.so', 'libcusolver.so'):
                    if base.startswith(lib):
                        found.setdefault(lib, path)
    except OSError:
        pass
    if 'libcusolver.so' not in found and 'libcublas.so' in found:
        d = os.path.dirname(found['libcublas.so'])
        for name in sorted(os.listdir(d)):
            if name.startswith('libcusolver.so'):
                found['libcusolver.so'] = os.path.join(d, name)
                break

    def version(lib, symbol):
        try:
            fn = getattr(ctypes.CDLL(found[lib]), symbol)
            parts = []
            for kind in range(3):
                x = ctypes.c_int()
                if fn(kind, ctypes.byref(x)) != 0:
                    return None
                parts.append(str(x.value))
            return '.'.join(parts)
        except (KeyError, OSError, AttributeError):
            return None

    driver = None
    try:
        with open('/sys/module/nvidia/version') as f:
            driver = f.read().strip()
    except OSError:
        pass
    return (version('libcublas.so', 'cublasGetProperty'),
            version('libcusolver.so', 'cusolverGetProperty'), driver)


def print_environment():
    print('torch %s, python %s, %s' % (torch.__version__, platform.python_version(),
                                        platform.platform()))
    capability = getattr(torch.backends.cpu, 'get_cpu_capability', lambda: '?')()
    forced = os.environ.get('ATEN_CPU_CAPABILITY')
    print('CPU: %s (%d cores), ATen CPU capability %s%s, %d threads' % (
        _cpu_name(), os.cpu_count() or 0, capability,
        ' (ATEN_CPU_CAPABILITY=%s)' % forced if forced else '', torch.get_num_threads()))
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        cublas, cusolver, driver = _cuda_library_versions()
        print('CUDA runtime %s, GPU: %s (sm_%d%d), driver %s, cuBLAS %s, cuSOLVER %s, cuDNN %s, '
              'TF32 matmul %s, TF32 cuDNN %s' % (
                  torch.version.cuda, p.name, p.major, p.minor, driver, cublas, cusolver,
                  torch.backends.cudnn.version(), torch.backends.cuda.matmul.allow_tf32,
                  torch.backends.cudnn.allow_tf32))
    else:
        print('CUDA: not available (torch built with CUDA %s)' % torch.version.cuda)


def exact(t, limit=EXACT_LIMIT):
    """The first elements exactly: hex floats (complex: re, im), integers."""
    if isinstance(t, list):
        return ' | '.join(exact(x, limit) for x in t)
    flat = t.reshape(-1)[:limit]
    if t.is_complex():
        vals = [x.hex() for p in flat.to(torch.complex128).tolist() for x in (p.real, p.imag)]
    elif t.is_floating_point():
        vals = [x.hex() for x in flat.to(torch.float64).tolist()]
    else:
        vals = [str(int(x)) for x in flat.to(torch.int64).tolist()]
    return ' '.join(vals) + (' ...' if t.numel() > limit else '')


def show(name, r):
    if isinstance(r, Failure):
        print('%s: %s' % (name, r))
    elif isinstance(r, list):
        for k, x in enumerate(r):
            show('%s invariant %d' % (name, k), x)
    else:
        print('%s: dtype %s, shape %s' % (name, r.dtype, list(r.shape)))
        print(r)
        print('  exact: %s' % exact(r))


def ulps(value, reference, dtype):
    """|value - reference| in units in the last place of dtype at the reference."""
    if dtype not in FLOAT_BITS or not (math.isfinite(value) and math.isfinite(reference)):
        return None
    mantissa, tiny_exponent = FLOAT_BITS[dtype]
    tiny = math.ldexp(1.0, tiny_exponent)  # the smallest subnormal
    spacing = tiny if reference == 0 else max(
        math.ldexp(1.0, math.frexp(abs(reference))[1] - 1 - mantissa), tiny)
    return abs(value - reference) / spacing


def element(t, flat):
    """Element `flat` of the real view (complex: re, im interleaved) as a float."""
    return float(_parts(t)[flat])


def check_side(name, value, reference):
    """Whether a side misses the float64 reference computed from its own inputs,
    and why (None, None when there is no reference to judge it by)."""
    if reference is None:
        return None, None
    own = ('the float64 gradient of the whole program' if GRADIENT else
           'the float64 reference computed from its own inputs')
    if isinstance(reference, Failure):
        if isinstance(value, Failure):
            return False, '%s raises, and so does the float64 reference' % name
        return True, 'the float64 reference raises (%s) but %s returns values' % (
            reference.message, name)
    if isinstance(value, Failure):
        return True, '%s raises (%s) where the float64 reference computes a value' % (
            name, value.message)
    ref = _to(reference, _dtype_of(value))
    cls, detail, _ = compare(value, ref, name, 'reference')
    if cls is None:
        return False, '%s matches %s' % (name, own)
    return True, '%s misses %s: %s: %s' % (name, own, cls, detail)


def check_exact(targets, results):
    """The sides that miss divfuzz's exact value at EXACT_ELEMENT (within the
    same tolerance), printed one a line."""
    print('  the exact value at element %d (divfuzz\'s MPFR or exact rationals, from each '
          'side\'s own inputs, rounded once), which decides:' % EXACT_ELEMENT)
    blamed = []
    for t in targets:
        value = results.get(t)
        if t not in EXACT or not isinstance(value, torch.Tensor) or value.is_complex() or \
                not value.is_floating_point() or EXACT_ELEMENT >= value.numel():
            continue
        x = value.reshape(-1)[EXACT_ELEMENT:EXACT_ELEMENT + 1]
        want = torch.tensor([EXACT[t]], dtype=torch.float64).to(value.dtype)
        cls, _, _ = compare(x, want, t, 'exact')
        print('    %s gives %s, the exact value is %s: %s' % (
            t, _at(x, 0, 0), _at(want, 0, 0), 'matches' if cls is None else 'misses (%s)' % cls))
        if cls is not None:
            blamed.append(t)
    return blamed


def dump_inputs():
    for name, t in make_inputs().items():
        print('%s %s %s: %s' % (name, t.dtype, list(t.shape), exact(t, limit=t.numel())))
    return 0


def _element_bits(t, i):
    """Element i of a flat real view, exactly: value, hex and raw bits."""
    e = t[i].item()
    if isinstance(e, float):
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
        raw = t[i:i + 1].view(bits).item() & ((1 << (8 * t.element_size())) - 1)
        return '%r (%s, bits 0x%0*x)' % (e, e.hex(), 2 * t.element_size(), raw)
    return repr(e)


def same_bits(x, y):
    """Whether two runs' results are the same bit for bit (a NaN matches any
    NaN in the same place; -0.0 and 0.0 differ), and else what differs."""
    if isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            return False, '%d vs %d results' % (len(x), len(y))
        for k, (p, q) in enumerate(zip(x, y)):
            same, detail = same_bits(p, q)
            if not same:
                return False, 'result %d: %s' % (k, detail)
        return True, None
    fx, fy = isinstance(x, Failure), isinstance(y, Failure)
    if fx and fy:
        return True, None
    if fx or fy:
        return False, 'one run raises: %s' % (x if fx else y)
    if x.shape != y.shape or x.dtype != y.dtype:
        return False, 'dtype/shape: %s %s vs %s %s' % (x.dtype, list(x.shape), y.dtype,
                                                      list(y.shape))
    per = 2 if x.is_complex() else 1
    if x.is_complex():
        x, y = torch.view_as_real(x.resolve_conj()), torch.view_as_real(y.resolve_conj())
    x, y = x.contiguous().reshape(-1), y.contiguous().reshape(-1)
    if x.is_floating_point():
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[x.element_size()]
        differ = (x.view(bits) != y.view(bits)) & ~(torch.isnan(x) & torch.isnan(y))
    else:
        differ = x != y
    where = differ.nonzero()
    if not len(where):
        return True, None
    i = int(where[0])
    part = ('', ' (real)', ' (imag)')[0 if per == 1 else 1 + i % 2]
    return False, 'element %d%s: %s vs %s' % (i // per, part, _element_bits(x, i),
                                             _element_bits(y, i))


def malloc_perturb(byte):
    """glibc's M_PERTURB: fresh malloc blocks hold ~byte (0: off); nothing
    without glibc."""
    try:
        import ctypes
        ctypes.CDLL(None).mallopt(-6, byte)
    except (OSError, AttributeError):
        pass


def without_malloc_cache():
    """Restarts this script once with glibc's thread cache off: malloc's
    perturb byte never reaches the blocks that cache hands back, and glibc
    2.38+ serves PyTorch's aligned CPU allocations from it too."""
    if platform.libc_ver()[0] != 'glibc' or os.environ.get(MALLOC_CACHE_OFF):
        return
    env = dict(os.environ, **{MALLOC_CACHE_OFF: '1'})
    env['GLIBC_TUNABLES'] = ':'.join(
        t for t in (env.get('GLIBC_TUNABLES'), NO_MALLOC_CACHE) if t)
    sys.stdout.flush()
    try:
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    except OSError as e:
        print('cannot restart with %s (%s): perturbing less memory' % (NO_MALLOC_CACHE, e))


def check_nondeterminism(target, runs, cuda):
    """Runs one target on the same inputs up to `runs` times (RERUN_SECONDS at
    most); 1 when a run differs from the first bit for bit (the finding
    reproduces), else 0. Runs alternate malloc's perturb byte 0xff (zeroed)
    and 0x5a (0xa5 bytes), so a kernel that reads memory it never wrote (CPU
    linalg_lstsq's gelsy pivots, pytorch#187411) differs between runs in a
    fresh process as it did in the fuzzer's; a correct kernel cannot tell."""
    if target == 'cuda' and not cuda:
        print('CUDA not available: skipping the nondeterminism check of cuda')
        return 0
    import time

    def perturbed(k):
        malloc_perturb(PERTURB_BYTES[0] if k % 2 else PERTURB_BYTES[1])
        try:
            return run(target)
        finally:
            malloc_perturb(0)

    print('runs alternate malloc\'s perturb byte (fresh memory zeroed, then 0xa5%s): a kernel '
          'that reads memory it never wrote differs too'
          % ('; glibc\'s thread cache off' if os.environ.get(MALLOC_CACHE_OFF) else ''))
    first = perturbed(1)
    start, k = time.monotonic(), 1
    while k < runs and time.monotonic() - start < RERUN_SECONDS:
        k += 1
        again = perturbed(k)
        same, detail = same_bits(first, again)
        if not same:
            print('%s run 1: %s' % (target, first if isinstance(first, Failure) else exact(first)))
            print('%s run %d: %s' % (target, k, again if isinstance(again, Failure)
                                     else exact(again)))
            print('VERDICT: nondeterminism reproduces (%s run 1 vs run %d): %s' % (target, k,
                                                                                  detail))
            return 1
    print('VERDICT: no nondeterminism in %d runs of %s' % (k, target))
    return 0


def check_failure(kind, target, seconds, cuda):
    """Runs one target in a child process: 1 when it hangs (still running
    after `seconds`) or crashes (dies by a signal, or a CUDA fault), as `kind`
    says, else 0."""
    import subprocess
    import tempfile
    import time
    if target == 'cuda' and not cuda:
        print('CUDA not available: skipping the %s check of cuda' % kind)
        return 0
    env = dict(os.environ, CUDA_LAUNCH_BLOCKING='1')
    if target == 'cpu-scalar':
        env['ATEN_CPU_CAPABILITY'] = 'default'
    run_as = 'cpu' if target == 'cpu-scalar' else target
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'result.pt')
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--child', run_as,
                                 path], env=env)
        # The clock starts when the child has started torch and runs the
        # program (it makes path.started), not at the interpreter's start.
        start = time.time()
        began = None
        while proc.poll() is None:
            now = time.time()
            if began is None and os.path.exists(path + '.started'):
                began = now
            if now - (began or start) > seconds + (0 if began else START_SECONDS):
                proc.kill()
                proc.wait()
                print('%s: still running after %d s (killed)' % (target, seconds))
                if kind == 'hang':
                    print('VERDICT: hang reproduces (%s, node %d, %s)' % (target, NODE, OP))
                    return 1
                print('VERDICT: no crash (%s hangs instead)' % target)
                return 0
            time.sleep(POLL_SECONDS)
        took = time.time() - (began or start)
        if proc.returncode < 0:
            print('%s: died by signal %d after %.1f s' % (target, -proc.returncode, took))
            if kind == 'crash':
                print('VERDICT: crash reproduces (%s, node %d, %s)' % (target, NODE, OP))
                return 1
            print('VERDICT: no hang (%s crashes instead)' % target)
            return 0
        result = torch.load(path) if os.path.exists(path) else {}
    error = result.get('error', '')
    # What a CUDA fault says (it poisons the process's CUDA context: a crash).
    if kind == 'crash' and any(f in error for f in CUDA_FAULTS):
        print('%s: a CUDA fault: %s' % (target, error.splitlines()[0] if error else ''))
        print('VERDICT: crash reproduces (%s, node %d, %s)' % (target, NODE, OP))
        return 1
    print('%s: finished in %.1f s (exit status %d%s)' % (
        target, took, proc.returncode, ', raised: ' + error.splitlines()[0] if error else ''))
    print('VERDICT: no %s' % kind)
    return 0


def collect(runs, cuda):
    """Every target's result (CUDA skipped when absent), comparable with the
    others; REFERENCES holds each side's float64 reference of the node."""
    results = {}
    for t in runs:
        if t == 'cuda' and not cuda:
            continue
        results[t] = run(t)
    _cast_back(results, list(results))
    if INVARIANTS:
        for t in list(results):
            if t in REFERENCES and not isinstance(REFERENCES[t], Failure):
                REFERENCES[t] = comparable(_to(REFERENCES[t], _dtype_of(results[t])))
            results[t] = comparable(results[t])
    return results


def show_all(runs, results):
    print()
    print('Output %%%s: result %d of node %d, %s' % (VALUE, OUTPUT, NODE, OP))
    for t in runs:
        if t not in results:
            print('%s: skipped (CUDA not available)' % t)
            continue
        show(t, results[t])
        if t in REFERENCES:
            ref = REFERENCES[t]
            what = ('float64 gradient (the whole program in float64, the same for every side)'
                    if GRADIENT else 'float64 reference from %s\'s own inputs' % t)
            if isinstance(ref, Failure):
                print('  %s: %s' % (what, ref))
            else:
                print('  %s: %s' % (what, exact(ref)))
    print()


def set_backend(backend):
    """Makes the CUDA switches of `backend` ('magma', 'magma+cublaslt';
    divfuzz's cuda+SWITCH targets) for this process and the children it
    starts. They change only which library CUDA kernels use."""
    names = [n for n in backend.split('+') if n]
    unknown = [n for n in names if n not in SWITCHES]
    if unknown:  # exit 2: the script fails (1 would say the divergence reproduces)
        print('--backend: unknown CUDA switch %s (expected some of %s, joined by +)'
              % (', '.join(unknown), ', '.join(SWITCHES)), file=sys.stderr)
        sys.exit(2)
    for n in names:
        exec(SWITCHES[n][1], {'torch': torch})  # noqa: S102 -- divfuzz's own statements
    os.environ['DIVFUZZ_REPRO_BACKEND'] = backend
    return ', '.join('%s (%s)' % (n, SWITCHES[n][0]) for n in names)


def main():
    ap = argparse.ArgumentParser(description='divfuzz repro: ' + TITLE)
    ap.add_argument('--backend', default=os.environ.get('DIVFUZZ_REPRO_BACKEND', BACKEND),
                    help='CUDA switches for the CUDA runs, joined by + (default: %(default)r; '
                    'from: ' + ', '.join(SWITCHES) + ')')
    ap.add_argument('--target-a', default=TARGET_A, choices=TARGETS)
    ap.add_argument('--target-b', default=TARGET_B, choices=TARGETS)
    ap.add_argument('--dump-inputs', action='store_true',
                    help='print every input exactly (hex floats) and exit')
    ap.add_argument('--runs', type=int, default=RUNS,
                    help='nondeterminism: how often to run %s' % RERUN if RERUN else
                    argparse.SUPPRESS)
    ap.add_argument('--attempts', type=int, default=ATTEMPTS,
                    help='how often to run both targets before saying the divergence does '
                    'not reproduce (default %(default)s)')
    ap.add_argument('--hang-seconds', type=int, default=HANG_SECONDS,
                    help='a hang: how long %s may run (default %%(default)s)' % FAILURE_TARGET
                    if FAILURE == 'hang' else argparse.SUPPRESS)
    ap.add_argument('--child', nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    switched = set_backend(args.backend)
    if args.child:
        return _child(*args.child)
    if args.dump_inputs:
        return dump_inputs()
    if RERUN and RERUN != 'cuda':
        without_malloc_cache()
    torch.set_printoptions(precision=10, threshold=sys.maxsize)
    targets = [args.target_a, args.target_b]
    print('divfuzz repro: %s' % TITLE)
    if SEEN:
        print('divfuzz saw: %s' % SEEN)
    if BACKWARD:
        print('backward kernel: %s' % BACKWARD)
    if switched:
        print('CUDA switches: %s' % switched)
    print_environment()
    cuda = torch.cuda.is_available()
    if FAILURE:
        # Running the program here would hang or kill this script.
        return check_failure(FAILURE, FAILURE_TARGET, args.hang_seconds, cuda)
    # CPU, CUDA and the float64 reference always (CUDA skipped when absent),
    # and whatever else the two targets name.
    runs = []
    for t in ['cpu', 'cuda', 'cpu-f64'] + targets:
        if t not in runs:
            runs.append(t)
    results = collect(runs, cuda)
    show_all(runs, results)
    if RERUN:
        return check_nondeterminism(RERUN, args.runs, cuda)
    if 'cuda' in targets and not cuda:
        print('CUDA not available: skipping the verdict (compare other targets with '
              '--target-a/--target-b, e.g. --target-a cpu --target-b cpu-f64)')
        return 0
    a, b = targets
    cls, detail, flat = compare(results[a], results[b], a, b)
    attempt = 1
    while cls is None and attempt < args.attempts:
        attempt += 1
        results = collect(runs, cuda)
        cls, detail, flat = compare(results[a], results[b], a, b)
    if cls is None:
        print('VERDICT: no divergence (%s vs %s%s): %s' % (
            a, b, '' if attempt == 1 else ', %d attempts' % attempt, detail))
        return 0
    if attempt > 1:
        print('The results vary from run to run: %s and %s diverge on attempt %d of %d:'
              % (a, b, attempt, args.attempts))
        show_all(runs, results)
    print('VERDICT: divergence reproduces (%s vs %s): %s: %s' % (a, b, cls, detail))
    # Who is wrong: each side against the float64 reference of the node
    # computed from its own inputs (cpu-f64 is the reference itself).
    wrong = {}
    for t in targets:
        if t == 'cpu-f64':
            print('  %s: the reference itself' % t)
            continue
        miss, why = check_side(t, results[t], REFERENCES.get(t))
        if miss is None:
            print('  %s: no per-node reference (runs in a child process)' % t)
            continue
        wrong[t] = miss
        print('  %s' % why)
        value, ref = results[t], REFERENCES.get(t)
        if isinstance(flat, tuple) and isinstance(value, list) and isinstance(ref, list):
            k, flat = flat
            value, ref = value[k], ref[k]
        if (flat is not None and isinstance(value, torch.Tensor) and
                isinstance(ref, torch.Tensor) and (value.is_floating_point() or value.is_complex())):
            try:
                x, r = element(value, flat), element(ref, flat)
                u = ulps(x, r, value.dtype)
                print('    at that element: %s %r, float64 reference %r%s' % (
                    t, x, r, '' if u is None else ', error %.4g ULPs' % u))
            except (IndexError, RuntimeError, TypeError):
                pass
    blamed = [t for t in targets if wrong.get(t)]
    if EXACT:
        # The float64 run shares the kernels' algorithms; the exact value
        # does not, and it is what divfuzz judged by.
        blamed = check_exact(targets, results)
    if len(blamed) == 2:
        side = 'undecided' if cls == 'tolerance' else 'both'
    elif len(blamed) == 1:
        side = blamed[0]
    else:
        side = 'undecided'
    print('WRONG SIDE: %s' % side)
    return 1


if __name__ == '__main__':
    try:
        code = main()
    except Exception:  # noqa: BLE001 -- a harness failure is not a reproduction
        traceback.print_exc()
        print('repro script failed (exit 2)', file=sys.stderr)
        code = 2
    sys.exit(code)
