"""Tuning from PyTorch, as torchair hands a captured graph to AOE: the model's forward graph,
and for training its backward graph and the optimizer's updates, are captured once as aten
ops, written as a ``torch.export``-format program (``<name>_step.pt2`` or ``<name>_fwd.pt2``
in ``ASCEND_WORK_PATH``) and tuned; the model then runs on untouched.

One line with ``torch.compile``::

    model = torch.compile(model, backend=tunebank.torch.backend())

or one call in a script::

    tunebank.torch.tune(model, (x,), loss_fn=loss, target=y, optimizer=opt)

Both read the environment as ``tunebank tune`` and ``tunebank.tf`` do: ``AOE_MODE`` (2 operator
tuning, 1 subgraph tuning, 4 gradient tuning; unset: nothing is done), ``TUNE_BANK_PATH``,
``ASCEND_CACHE_PATH``, ``REPEAT_TUNE``, ``ASCEND_WORK_PATH`` (where the result file and the
program are written; default the working directory) and ``RANK_SIZE``.

The capture is ``make_fx`` over fake tensors (nothing runs, the weights and the optimizer's
state are untouched): the forward, ``torch.autograd.grad`` of the loss (AOTAutograd's backward
ops: ``convolution_backward``, ``native_batch_norm_backward`` …) and, given an optimizer, its
update rule replayed in place on the parameters and its state (SGD with momentum, Adam, AdamW,
as ``torch.optim``'s single-tensor forms write them). ``torch`` is an optional dependency:
``pip install ./python[torch]``.
"""

import io
import json
import logging
import operator
import zipfile

from . import _step
from . import tune as _tune

__all__ = ["backend", "capture", "tune", "program_bytes"]

log = logging.getLogger("tunebank")


#: The program schema version written (torch.export's, whose reader is tunebank's `.pt2`).
SCHEMA_VERSION = {"major": 8, "minor": 0}


def _dtype_code(dtype):
    import torch

    codes = {
        torch.uint8: 1,
        torch.int8: 2,
        torch.int16: 3,
        torch.int32: 4,
        torch.int64: 5,
        torch.float16: 6,
        torch.float32: 7,
        torch.float64: 8,
        torch.bool: 12,
        torch.bfloat16: 13,
    }
    return codes.get(dtype, 0)


def _meta(val):
    return {"dtype": _dtype_code(val.dtype), "sizes": [{"as_int": int(s)} for s in val.shape]}


def _is_tensor(v):
    import torch

    return isinstance(v, torch.Tensor)


def _arg(v, nodes):
    """One argument in torch.export's `Argument` form."""
    import torch
    import torch.fx as fx

    if isinstance(v, fx.Node):
        val = v.meta.get("val")
        if val is not None and not _is_tensor(val):
            return _arg(int(val) if hasattr(val, "node") else val, nodes)
        return {"as_tensor": {"name": nodes[v]}}
    if v is None:
        return {"as_none": True}
    if isinstance(v, bool):
        return {"as_bool": v}
    if isinstance(v, int):
        return {"as_int": v}
    if isinstance(v, float):
        return {"as_float": v}
    if isinstance(v, str):
        return {"as_string": v}
    if isinstance(v, torch.dtype):
        return {"as_scalar_type": _dtype_code(v)}
    if isinstance(v, (list, tuple)):
        # A size computed in the graph (a node whose value is a number) is its value.
        v = [
            x.meta.get("val") if isinstance(x, fx.Node) and not _is_tensor(x.meta.get("val"))
            else x
            for x in v
        ]
        v = [int(x) if hasattr(x, "node") and not _is_tensor(x) else x for x in v]
        if any(isinstance(x, fx.Node) for x in v):
            if any(x is None for x in v):
                return {
                    "as_optional_tensors": [
                        {"as_none": True} if x is None else {"as_tensor": {"name": nodes[x]}}
                        for x in v
                    ]
                }
            return {"as_tensors": [{"name": nodes[x]} for x in v]}
        if all(isinstance(x, bool) for x in v) and v:
            return {"as_bools": list(v)}
        if all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            return {"as_ints": list(v)}
        if all(isinstance(x, (int, float)) for x in v):
            return {"as_floats": [float(x) for x in v]}
    return {"as_other": str(v)}


def _graph_json(gm, params, buffers, gradients):
    """The program JSON of a traced aten graph: `params`/`buffers` map placeholder → module
    path; `gradients` maps an output node's name → the parameter path it is the gradient of."""
    import torch

    names = {}
    users_of = {}
    for n in gm.graph.nodes:
        names[n] = n.name
        if n.op == "call_function" and n.target is operator.getitem:
            users_of.setdefault(n.args[0], {})[n.args[1]] = n
    tensor_values = {}
    nodes = []
    inputs = []
    outputs = []
    for n in gm.graph.nodes:
        val = n.meta.get("val")
        if n.op == "placeholder":
            tensor_values[n.name] = _meta(val)
            if n.name in params:
                inputs.append(
                    {"parameter": {"arg": {"name": n.name}, "parameter_name": params[n.name]}}
                )
            elif n.name in buffers:
                inputs.append(
                    {
                        "buffer": {
                            "arg": {"name": n.name},
                            "buffer_name": buffers[n.name],
                            "persistent": True,
                        }
                    }
                )
            else:
                inputs.append({"user_input": {"arg": {"as_tensor": {"name": n.name}}}})
            continue
        if n.op == "output":
            flat = torch.utils._pytree.tree_leaves(n.args[0])
            outputs = [{"as_tensor": {"name": names[x]}} for x in flat if x is not None]
            continue
        if n.op != "call_function" or n.target is operator.getitem:
            continue
        target = n.target
        schema = getattr(target, "_schema", None)
        args = []
        if schema is not None:
            for i, a in enumerate(schema.arguments):
                if i < len(n.args):
                    v = n.args[i]
                elif a.name in n.kwargs:
                    v = n.kwargs[a.name]
                else:
                    continue
                args.append({"name": a.name, "arg": _arg(v, names), "kind": 1})
            target_name = f"torch.ops.{target}"
        else:
            args = [{"name": "", "arg": _arg(v, names), "kind": 1} for v in n.args]
            target_name = getattr(target, "__name__", str(target))
        outs = []
        if isinstance(val, (list, tuple)):
            users = users_of.get(n, {})
            returns = schema.returns if schema is not None else []
            as_list = len(returns) == 1 and str(returns[0].type).endswith("[]")
            entries = []
            for k, v in enumerate(val):
                if not _is_tensor(v):
                    entries.append(None)
                    continue
                name = users[k].name if k in users else f"{n.name}__{k}"
                tensor_values[name] = _meta(v)
                entries.append(name)
            if as_list:
                outs = [{"as_tensors": [{"name": e} for e in entries if e is not None]}]
            else:
                outs = [
                    {"as_none": True} if e is None else {"as_tensor": {"name": e}}
                    for e in entries
                ]
        elif _is_tensor(val):
            tensor_values[n.name] = _meta(val)
            outs = [{"as_tensor": {"name": n.name}}]
        nodes.append({"target": target_name, "inputs": args, "outputs": outs})
    output_specs = [
        {"gradient_to_parameter": {"arg": {"name": o["as_tensor"]["name"]},
                                   "parameter_name": gradients[o["as_tensor"]["name"]]}}
        if o["as_tensor"]["name"] in gradients
        else {"user_output": {"arg": o}}
        for o in outputs
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "graph_module": {
            "graph": {"nodes": nodes, "tensor_values": tensor_values, "outputs": outputs},
            "signature": {"input_specs": inputs, "output_specs": output_specs},
        },
    }


def program_bytes(program, name="model"):
    """A `.pt2` archive (stored entries, the layout torch.export.save writes) holding only the
    program: `<name>/archive_format` and `<name>/models/model.json`."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{name}/archive_format", "pt2")
        z.writestr(f"{name}/archive_version", "0")
        z.writestr(f"{name}/models/model.json", json.dumps(program))
    return buf.getvalue()


def _unsupported(kind):
    return (f"optimizer {kind}: expected torch.optim.SGD, Adam or AdamW (tunebank replays "
            "their update rule in the captured step)")


def _optimizer_update(optimizer, params, grads, state):
    """`optimizer`'s update of `params` (name → tensor) by `grads`, in place, on the state
    tensors `state` (name → tensor), as torch.optim's single-tensor forms write it."""
    import torch

    group = optimizer.param_groups[0]
    kind = type(optimizer).__name__
    lr = float(group["lr"])
    for name, p in params.items():
        g = grads[name]
        if kind == "SGD":
            wd = float(group.get("weight_decay", 0.0))
            if wd:
                g = g.add(p, alpha=wd)
            if group.get("momentum", 0.0):
                buf = state[f"{name}.momentum_buffer"]
                buf.mul_(group["momentum"]).add_(g, alpha=1 - group.get("dampening", 0.0))
                g = buf
            p.add_(g, alpha=-lr)
        elif kind in ("Adam", "AdamW"):
            b1, b2 = group["betas"]
            wd = float(group.get("weight_decay", 0.0))
            if kind == "AdamW" and wd:
                p.mul_(1 - lr * wd)
            elif wd:
                g = g.add(p, alpha=wd)
            m, v = state[f"{name}.exp_avg"], state[f"{name}.exp_avg_sq"]
            m.lerp_(g, 1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v.sqrt() / (1 - b2) ** 0.5).add_(group["eps"])
            p.addcdiv_(m, denom, value=-lr / (1 - b1))
        else:
            raise ValueError(_unsupported(kind))


def _state_names(optimizer, params):
    if optimizer is None:
        return []
    kind = type(optimizer).__name__
    slots = {"SGD": ["momentum_buffer"] if optimizer.param_groups[0].get("momentum") else [],
             "Adam": ["exp_avg", "exp_avg_sq"], "AdamW": ["exp_avg", "exp_avg_sq"]}.get(kind)
    if slots is None:
        raise ValueError(_unsupported(kind))
    return [f"{n}.{s}" for n in params for s in slots]


def capture(module, example_inputs, *, loss_fn=None, target=None, optimizer=None,
            training=None, name="model"):
    """The program (`.pt2` bytes) of ``module`` on ``example_inputs`` (a tuple): the forward
    alone, or — ``training`` (default: whether ``loss_fn`` or ``optimizer`` is given) — one
    training step: the forward, the loss (``loss_fn(output, target)``; without one the sum of
    the outputs), its gradients with respect to the trainable parameters and ``optimizer``'s
    update. Traced on fake tensors: nothing runs."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    if training is None:
        training = loss_fn is not None or optimizer is not None
    paths = getattr(module, "_tunebank_paths", {})
    params = {n: p for n, p in module.named_parameters() if p.requires_grad}
    buffers = dict(module.named_buffers())
    frozen = {n: p for n, p in module.named_parameters() if not p.requires_grad}
    slots = _state_names(optimizer, params) if training else []
    pnames, bnames = list(params), list(buffers) + list(frozen)
    extra = [] if target is None else [target]

    def step(ps, bs, st, inputs, extra):
        state = {**dict(zip(pnames, ps)), **dict(zip(bnames, bs))}
        out = torch.func.functional_call(module, state, tuple(inputs))
        if not training:
            return out
        leaves = [o for o in torch.utils._pytree.tree_leaves(out) if _is_tensor(o)]
        loss = loss_fn(out, *extra) if loss_fn is not None else sum(o.sum() for o in leaves)
        grads = torch.autograd.grad(loss, ps)
        if optimizer is not None:
            with torch.no_grad():
                _optimizer_update(
                    optimizer,
                    dict(zip(pnames, ps)),
                    dict(zip(pnames, grads)),
                    dict(zip(slots, st)),
                )
        return (loss, *grads)

    was_training = module.training
    module.train(training)
    try:
        ps = [p.detach().requires_grad_(training) for p in params.values()]
        bs = [b.detach() for b in list(buffers.values()) + list(frozen.values())]
        st = [torch.zeros_like(params[s.rsplit(".", 1)[0]]) for s in slots]
        gm = make_fx(step, tracing_mode="fake")(ps, bs, st, list(example_inputs), extra)
    finally:
        module.train(was_training)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    k = len(ps)
    pmap = {n.name: paths.get(pnames[i], pnames[i]) for i, n in enumerate(placeholders[:k])}
    bmap = {n.name: paths.get(bnames[i], bnames[i])
            for i, n in enumerate(placeholders[k:k + len(bs)])}
    def slot_path(s):
        owner, slot = s.rsplit(".", 1)
        return f"{paths.get(owner, owner)}.{slot}"

    smap = {n.name: slot_path(slots[i])
            for i, n in enumerate(placeholders[k + len(bs):k + len(bs) + len(st)])}
    bmap.update(smap)
    gradients = {}
    if training:
        out = [n for n in gm.graph.nodes if n.op == "output"][0]
        flat = torch.utils._pytree.tree_leaves(out.args[0])
        gradients = {g.name: paths.get(pnames[i], pnames[i])
                     for i, g in enumerate(flat[1:1 + k]) if g is not None}
    return program_bytes(_graph_json(gm, pmap, bmap, gradients), name)


def tune(module, example_inputs, *, loss_fn=None, target=None, optimizer=None, name=None,
         soc_version="Ascend910B2", **options):
    """Tunes ``module`` when ``AOE_MODE`` is set (else returns ``None`` and does nothing): a
    training step when ``loss_fn`` or ``optimizer`` is given (``<name>_step.pt2``), else the
    forward (``<name>_fwd.pt2``), written to ``ASCEND_WORK_PATH`` and tuned with
    ``tunebank.tune`` (the job type from ``AOE_MODE``). A step without ``precision_mode`` is
    tuned under the precision GE compiles a training graph with when none is set (torchair
    sets none): ``must_keep_origin_dtype`` where the cube computes float32 in high precision
    (Atlas A2: the 910B family; the 910_93 family), else ``allow_fp32_to_fp16``
    (:func:`tunebank.training_precision_mode`). Returns the :class:`tunebank.TuneResult`."""
    if not _step.aoe_mode():
        return None
    log.info("in tune mode, training graph handled by tools.")
    training = loss_fn is not None or optimizer is not None
    name = name or type(module).__name__.lower()
    data = capture(module, example_inputs, loss_fn=loss_fn, target=target,
                   optimizer=optimizer, training=training, name=name)
    path = _step.write(data, f"{name}_{'step' if training else 'fwd'}.pt2")
    log.info("Aoe tuning graph.")
    options = _step.options(training, options, "torch", soc_version)
    return _tune(path, soc_version=soc_version, **options)


def _module_path(placeholder):
    """The module path of a parameter or buffer input of a graph torch.compile captured
    (`L_self_modules_conv1_parameters_weight_` → `conv1.weight`)."""
    p = placeholder
    for prefix in ("L_self_", "L_"):
        if p.startswith(prefix):
            p = p[len(prefix):]
            break
    p = p.rstrip("_")
    for part in ("_modules_", "_parameters_", "_buffers_"):
        p = p.replace(part, ".")
    for part in ("modules_", "parameters_", "buffers_"):
        if p.startswith(part):
            p = p[len(part):]
    return p


def _lifted(gm, example_inputs):
    """A module around a graph torch.compile captured whose parameters and buffers are graph
    inputs: the parameters (inputs that are `nn.Parameter`s) and buffers (inputs named as a
    module's buffers) become the module's own, named by their module path; the other inputs
    stay its inputs. Returns the module and its user inputs."""
    import torch

    class Lifted(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gm = gm
            self.kinds = []
            self._tunebank_paths = {}

        def forward(self, *user):
            it = iter(user)
            args = [getattr(self, name) if kind else next(it) for kind, name in self.kinds]
            return self.gm(*args)

    mod = Lifted()
    user = []
    names = [n.target for n in gm.graph.nodes if n.op == "placeholder"]
    for i, (x, ph) in enumerate(zip(example_inputs, names)):
        if isinstance(x, torch.nn.Parameter):
            key = f"p{i}"
            mod.register_parameter(key, x)
        elif "_buffers_" in ph and isinstance(x, torch.Tensor):
            key = f"b{i}"
            mod.register_buffer(key, x)
        else:
            mod.kinds.append((False, None))
            user.append(x)
            continue
        mod.kinds.append((True, key))
        mod._tunebank_paths[key] = _module_path(ph)
    return mod, tuple(user)


class _Backend:
    """The ``torch.compile`` backend :func:`backend` returns."""

    def __init__(self, soc_version, name, loss_fn, optimizer, then, options):
        self.soc_version = soc_version
        self.name = name
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.then = then
        self.options = options
        self.results = []

    def __call__(self, gm, example_inputs):
        import torch

        if _step.aoe_mode() and not self.results:
            module, user = _lifted(gm, example_inputs)
            training = torch.is_grad_enabled() and any(
                p.requires_grad for p in module.parameters()
            )
            data = capture(module, user, loss_fn=self.loss_fn,
                           optimizer=self.optimizer if training else None,
                           training=training, name=self.name)
            log.info("in tune mode, training graph handled by tools.")
            path = _step.write(data, f"{self.name}_{'step' if training else 'fwd'}.pt2")
            log.info("Aoe tuning graph.")
            options = _step.options(training, dict(self.options), "torch", self.soc_version)
            self.results.append(_tune(path, soc_version=self.soc_version, **options))
        if self.then == "inductor":
            from torch._inductor.compile_fx import compile_fx

            return compile_fx(gm, example_inputs)
        return gm.forward


def backend(*, soc_version="Ascend910B2", name="model", loss_fn=None, optimizer=None,
            then="eager", **options):
    """A ``torch.compile`` backend that tunes the captured graph once, at the first call, when
    ``AOE_MODE`` is set: the forward, and when the graph's parameters require gradients the
    training step (the loss ``loss_fn(output)`` or the sum of the outputs, its backward and,
    given ``optimizer``, its update). The graph then runs as ``then`` compiles it: ``"eager"``
    (the default: the captured graph as is, numerics untouched) or ``"inductor"`` (torch's
    default backend). ``backend.results`` holds the :class:`tunebank.TuneResult`s."""
    if then not in ("eager", "inductor"):
        raise ValueError(f"then={then!r}: expected 'eager' or 'inductor'")
    return _Backend(soc_version, name, loss_fn, optimizer, then, options)
