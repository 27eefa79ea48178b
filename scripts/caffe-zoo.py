#!/usr/bin/env python3
"""Writes a caffemodel of blob shapes for a Caffe deploy prototxt, to try the Caffe importer on
real model-zoo nets whose weights are not at hand.

Usage (from the repository root):

    python3 scripts/caffe-zoo.py NET.prototxt OUT.caffemodel [--shapes]

Reads NET.prototxt (protobuf text format, `layer { … }` or legacy `layers { … }` with V1 enum
types, inputs declared by `input:` + `input_shape { … }` / `input_dim:` or by `Input` layers),
works out every blob's shape (N, C, H, W) layer by layer as Caffe does in the TEST phase, and
writes OUT.caffemodel: a binary caffe.NetParameter holding each layer that has learned blobs
(convolution, inner product, batch norm, scale, …) with its name, type, bottoms, tops and its
blobs' shapes (BlobProto.shape = BlobShape { repeated int64 dim = 1 [packed] }), no data.
tunebank's importers read shapes only, so this stands in for the real weights.

It stops with a message naming the layer when it meets a layer type it cannot propagate, a
bottom no earlier layer produced, or shapes Caffe would reject (Eltwise or Concat inputs that
disagree, a channel count a group does not divide). `--shapes` prints every top's shape.

The protobuf writer is fixtures/models/frameworks/make_frameworks.py's (`caffemodel`, and
`decoded_shapes` to check that the written blob shapes read back); that file is loaded from its
path, not copied. Python 3 standard library only.
"""

import argparse
import importlib.util
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WRITER = os.path.join(ROOT, "fixtures", "models", "frameworks", "make_frameworks.py")


class ZooError(Exception):
    """A prototxt this script cannot turn into a caffemodel; the message says where and why."""


def load_writer():
    """make_frameworks.py as a module (its TensorFlow parts import their libraries lazily)."""
    spec = importlib.util.spec_from_file_location("make_frameworks", WRITER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- text format


class Msg:
    """A text-format message: its fields in order, as (name, value) pairs. A value is a str
    (a scalar as written, quoted strings unescaped) or a Msg."""

    def __init__(self):
        self.fields = []

    def all(self, name):
        return [v for k, v in self.fields if k == name]

    def get(self, name, default=None):
        """The last value of a field (protobuf's rule for a repeated singular field)."""
        values = self.all(name)
        return values[-1] if values else default

    def msg(self, name):
        """A nested message, or an empty one when absent."""
        value = self.get(name)
        return value if isinstance(value, Msg) else Msg()

    def int(self, name, default=None):
        value = self.get(name)
        return default if value is None else to_int(value, name)

    def float(self, name, default=None):
        value = self.get(name)
        return default if value is None else to_float(value, name)

    def bool(self, name, default=None):
        value = self.get(name)
        if value is None:
            return default
        if value in ("true", "True", "t", "1"):
            return True
        if value in ("false", "False", "f", "0"):
            return False
        raise ZooError(f"{name}: {value!r} is not a boolean")

    def ints(self, name):
        return [to_int(v, name) for v in self.all(name)]

    def floats(self, name):
        return [to_float(v, name) for v in self.all(name)]


def to_int(value, name):
    try:
        return int(value, 0) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        try:
            f = float(value)
        except (TypeError, ValueError):
            raise ZooError(f"{name}: {value!r} is not an integer") from None
        if f != int(f):
            raise ZooError(f"{name}: {value!r} is not an integer")
        return int(f)


def to_float(value, name):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ZooError(f"{name}: {value!r} is not a number") from None


TOKEN = re.compile(
    r"""(?P<space>\s+|\#[^\n]*)
      | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
      | (?P<word>[A-Za-z0-9_.+\-]+)
      | (?P<ext>\[[A-Za-z0-9_.]+\])
      | (?P<punct>[{}\[\]<>:,;])""",
    re.VERBOSE,
)

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v",
           "\\": "\\", "'": "'", '"': '"', "?": "?"}


def unescape(body):
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in ESCAPES:
            out.append(ESCAPES[nxt])
            i += 2
        elif nxt in "xX":
            m = re.match(r"[0-9A-Fa-f]{1,2}", body[i + 2:])
            out.append(chr(int(m.group(), 16)))
            i += 2 + len(m.group())
        elif nxt in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:])
            out.append(chr(int(m.group(), 8)))
            i += 1 + len(m.group())
        else:
            out.append(nxt)
            i += 2
    return "".join(out)


def tokenize(text):
    tokens, pos, line = [], 0, 1
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise ZooError(f"line {line}: unexpected character {text[pos]!r}")
        kind = m.lastgroup
        if kind != "space":
            tokens.append((kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    return tokens


def parse_text(text):
    """Protobuf text format → Msg (schema-free)."""
    tokens = tokenize(text)
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else (None, None, tokens[-1][2] if tokens else 1)

    def take(expected=None):
        nonlocal pos
        kind, value, line = peek()
        if kind is None:
            raise ZooError(f"line {line}: unexpected end of file")
        if expected is not None and value != expected:
            raise ZooError(f"line {line}: expected {expected!r}, found {value!r}")
        pos += 1
        return kind, value, line

    def scalar():
        kind, value, line = take()
        if kind == "string":
            parts = [unescape(value[1:-1])]
            while peek()[0] == "string":  # adjacent strings concatenate
                parts.append(unescape(take()[1][1:-1]))
            return "".join(parts)
        if kind != "word":
            raise ZooError(f"line {line}: expected a value, found {value!r}")
        return value

    def message(close):
        msg = Msg()
        while True:
            kind, value, line = peek()
            if kind is None:
                if close is None:
                    return msg
                raise ZooError(f"line {line}: unexpected end of file, expected {close!r}")
            if value == close:
                take()
                return msg
            if kind not in ("word", "ext"):
                raise ZooError(f"line {line}: expected a field name, found {value!r}")
            name = take()[1]
            colon = peek()[1] == ":"
            if colon:
                take()
            opener = peek()[1]
            if opener in ("{", "<"):
                take()
                msg.fields.append((name, message("}" if opener == "{" else ">")))
            elif opener == "[" and colon:
                take()
                while peek()[1] != "]":
                    if peek()[1] in ("{", "<"):
                        o = take()[1]
                        msg.fields.append((name, message("}" if o == "{" else ">")))
                    else:
                        msg.fields.append((name, scalar()))
                    if peek()[1] == ",":
                        take()
                take("]")
            elif colon:
                msg.fields.append((name, scalar()))
            else:
                raise ZooError(f"line {line}: expected ':' or '{{' after {name!r}")
            if peek()[1] in (",", ";"):
                take()

    return message(None)


# ---------------------------------------------------------------- layers

# V1LayerParameter.LayerType (legacy `layers { type: CONVOLUTION }`) → the layer type name.
V1_TYPES = {
    "ABSVAL": "AbsVal", "ACCURACY": "Accuracy", "ARGMAX": "ArgMax", "BNLL": "BNLL",
    "CONCAT": "Concat", "CONTRASTIVE_LOSS": "ContrastiveLoss", "CONVOLUTION": "Convolution",
    "DATA": "Data", "DECONVOLUTION": "Deconvolution", "DROPOUT": "Dropout",
    "DUMMY_DATA": "DummyData", "EUCLIDEAN_LOSS": "EuclideanLoss", "ELTWISE": "Eltwise",
    "EXP": "Exp", "FLATTEN": "Flatten", "HDF5_DATA": "HDF5Data", "HDF5_OUTPUT": "HDF5Output",
    "HINGE_LOSS": "HingeLoss", "IM2COL": "Im2col", "IMAGE_DATA": "ImageData",
    "INFOGAIN_LOSS": "InfogainLoss", "INNER_PRODUCT": "InnerProduct", "LRN": "LRN",
    "MEMORY_DATA": "MemoryData", "MULTINOMIAL_LOGISTIC_LOSS": "MultinomialLogisticLoss",
    "MVN": "MVN", "POOLING": "Pooling", "POWER": "Power", "RELU": "ReLU", "SIGMOID": "Sigmoid",
    "SIGMOID_CROSS_ENTROPY_LOSS": "SigmoidCrossEntropyLoss", "SILENCE": "Silence",
    "SOFTMAX": "Softmax", "SOFTMAX_LOSS": "SoftmaxWithLoss", "SPLIT": "Split", "SLICE": "Slice",
    "TANH": "TanH", "WINDOW_DATA": "WindowData", "THRESHOLD": "Threshold",
}
V1_NUMBERS = {
    "35": "ABSVAL", "1": "ACCURACY", "30": "ARGMAX", "2": "BNLL", "3": "CONCAT",
    "37": "CONTRASTIVE_LOSS", "4": "CONVOLUTION", "5": "DATA", "39": "DECONVOLUTION",
    "6": "DROPOUT", "32": "DUMMY_DATA", "7": "EUCLIDEAN_LOSS", "25": "ELTWISE", "38": "EXP",
    "8": "FLATTEN", "9": "HDF5_DATA", "10": "HDF5_OUTPUT", "28": "HINGE_LOSS", "11": "IM2COL",
    "12": "IMAGE_DATA", "13": "INFOGAIN_LOSS", "14": "INNER_PRODUCT", "15": "LRN",
    "29": "MEMORY_DATA", "16": "MULTINOMIAL_LOGISTIC_LOSS", "34": "MVN", "17": "POOLING",
    "26": "POWER", "18": "RELU", "19": "SIGMOID", "27": "SIGMOID_CROSS_ENTROPY_LOSS",
    "36": "SILENCE", "20": "SOFTMAX", "21": "SOFTMAX_LOSS", "22": "SPLIT", "33": "SLICE",
    "23": "TANH", "24": "WINDOW_DATA", "31": "THRESHOLD",
}

# Layers whose every top has the shape of bottom 0. (Yolo and Region are kept at their input's
# shape for simplicity: they end a net, so no learned blob depends on their output.)
SAME_SHAPE = {
    "ReLU", "ReLU6", "PReLU", "ELU", "Sigmoid", "TanH", "AbsVal", "BNLL", "Exp", "Log", "Power",
    "Threshold", "Clip", "Swish", "Mish", "HardSigmoid", "HSigmoid", "HSwish", "HardSwish",
    "Dropout", "Softmax", "LRN", "MVN", "BatchNorm", "Scale", "Bias", "Normalize",
    "ShuffleChannel", "Yolo", "Region",
}

# Layers whose output is a detection list (Caffe shapes it [1, 1, N, 7] at run time).
DETECTION_OUTPUTS = {"DetectionOutput", "SSDDetectionOutput", "YoloDetectionOutput",
                     "Yolov3DetectionOutput", "YoloV3DetectionOutput"}

# Data layers whose shape comes from a dataset, not the prototxt.
DATA_LAYERS = {"Data", "ImageData", "HDF5Data", "WindowData", "AnnotatedData", "VideoData"}


class Layer:
    def __init__(self, msg, legacy):
        self.msg = msg
        self.name = msg.get("name", "")
        ty = msg.get("type", "")
        if legacy:
            ty = V1_TYPES.get(V1_NUMBERS.get(ty, ty), ty)
        self.type = ty
        self.bottoms = list(msg.all("bottom"))
        self.tops = list(msg.all("top"))

    def describe(self):
        return f"layer {self.name!r} ({self.type})"

    def param(self, name):
        return self.msg.msg(name)


def in_test_phase(layer):
    """Caffe's NetState filtering for a deploy net: phase TEST, level 0, no stages."""

    def matches(rule):
        phase = rule.get("phase")
        if phase is not None and phase not in ("TEST", "1"):
            return False
        if rule.int("min_level", 0) > 0 or rule.int("max_level", 0) < 0:
            return False
        return not rule.all("stage")

    includes = layer.msg.all("include")
    excludes = layer.msg.all("exclude")
    if includes:
        return any(matches(r) for r in includes)
    return not any(matches(r) for r in excludes)


def read_net(text):
    """(net name, input declarations [(name, shape)], layers in order)."""
    net = parse_text(text)
    inputs = []
    names = net.all("input")
    shapes = [[to_int(d, "input_shape.dim") for d in s.all("dim")] for s in net.all("input_shape")]
    dims = [to_int(d, "input_dim") for d in net.all("input_dim")]
    if shapes:
        if len(shapes) != len(names):
            raise ZooError(f"{len(names)} input(s) but {len(shapes)} input_shape(s)")
        inputs = list(zip(names, shapes))
    elif dims:
        if len(dims) != 4 * len(names):
            raise ZooError(f"{len(names)} input(s) need {4 * len(names)} input_dim, found {len(dims)}")
        inputs = [(n, dims[4 * i:4 * i + 4]) for i, n in enumerate(names)]
    elif names:
        raise ZooError(f"input {names[0]!r} has no input_shape or input_dim")
    layers = [Layer(m, False) for m in net.all("layer")] + [Layer(m, True) for m in net.all("layers")]
    if net.all("layer") and net.all("layers"):
        raise ZooError("the net mixes `layer` and legacy `layers` blocks")
    return net.get("name", ""), inputs, layers


# ---------------------------------------------------------------- shapes


def pair(p, name, default):
    """A spatial (h, w) parameter: `name_h`/`name_w`, or repeated `name` (one value for both)."""
    h, w = p.int(name + "_h"), p.int(name + "_w")
    if h is not None or w is not None:
        return (h if h is not None else default, w if w is not None else default)
    values = p.ints(name)
    if not values:
        return (default, default)
    if len(values) == 1:
        return (values[0], values[0])
    if len(values) == 2:
        return tuple(values)
    raise ZooError(f"{name}: {len(values)} values, expected 1 or 2 for a 2-D layer")


def kernel(p):
    """(kh, kw): `kernel_h`/`kernel_w` if given, else `kernel_size` (None when absent)."""
    if p.get("kernel_h") is not None or p.get("kernel_w") is not None:
        return (p.int("kernel_h"), p.int("kernel_w"))
    return pair(p, "kernel_size", None)


def count(shape):
    return math.prod(shape)


def norm_axis(axis, rank, what):
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < rank:
        raise ZooError(f"{what} {axis} is out of range for a blob of rank {rank}")
    return a


class Net:
    """Shape propagation through one net; `learned` collects (name, type, bottoms, tops, blobs)."""

    def __init__(self):
        self.shapes = {}
        self.learned = []
        self.order = []  # (top, shape) as produced, for --shapes

    def set(self, top, shape):
        self.shapes[top] = list(shape)
        self.order.append((top, list(shape)))

    def run(self, inputs, layers):
        for name, shape in inputs:
            self.set(name, shape)
        for layer in layers:
            if not in_test_phase(layer):
                continue
            try:
                self.layer(layer)
            except ZooError as err:
                raise ZooError(f"{layer.describe()}: {err}") from None

    def bottom(self, layer, i=0):
        if i >= len(layer.bottoms):
            raise ZooError(f"expected at least {i + 1} bottom(s), found {len(layer.bottoms)}")
        b = layer.bottoms[i]
        if b not in self.shapes:
            raise ZooError(f"bottom {b!r} is not produced by any earlier layer or input")
        return self.shapes[b]

    def nchw(self, layer, i=0):
        shape = self.bottom(layer, i)
        if len(shape) != 4:
            raise ZooError(f"bottom {layer.bottoms[i]!r} has shape {shape}, expected N,C,H,W")
        return shape

    def learn(self, layer, blobs):
        self.learned.append((layer.name, layer.type, layer.bottoms, layer.tops, blobs))

    def layer(self, layer):
        t = layer.type
        if t == "Input":
            shapes = [[to_int(d, "shape.dim") for d in s.all("dim")]
                      for s in layer.param("input_param").all("shape")]
            if len(shapes) == 1:
                shapes = shapes * len(layer.tops)
            if len(shapes) != len(layer.tops):
                raise ZooError(f"{len(layer.tops)} top(s) but {len(shapes)} shape(s)")
            for top, shape in zip(layer.tops, shapes):
                self.set(top, shape)
        elif t == "DummyData":
            p = layer.param("dummy_data_param")
            shapes = [[to_int(d, "shape.dim") for d in s.all("dim")] for s in p.all("shape")]
            if not shapes:
                fields = [p.ints(f) for f in ("num", "channels", "height", "width")]
                shapes = [list(s) for s in zip(*fields)]
            if len(shapes) == 1:
                shapes = shapes * len(layer.tops)
            for top, shape in zip(layer.tops, shapes):
                self.set(top, shape)
        elif t == "MemoryData":
            p = layer.param("memory_data_param")
            shape = [p.int(f, 0) for f in ("batch_size", "channels", "height", "width")]
            self.set(layer.tops[0], shape)
            if len(layer.tops) > 1:
                self.set(layer.tops[1], [shape[0], 1, 1, 1])
        elif t in DATA_LAYERS:
            raise ZooError("a data layer's shape comes from its dataset; declare an input instead")
        elif t in ("Convolution", "ConvolutionDepthwise", "DepthwiseConvolution", "Deconvolution"):
            self.convolution(layer)
        elif t == "InnerProduct":
            p = layer.param("inner_product_param")
            shape = self.bottom(layer)
            axis = norm_axis(p.int("axis", 1), len(shape), "axis")
            n = p.int("num_output")
            if n is None:
                raise ZooError("no inner_product_param.num_output")
            k = count(shape[axis:])
            blobs = [[k, n] if p.bool("transpose", False) else [n, k]]
            if p.bool("bias_term", True):
                blobs.append([n])
            self.learn(layer, blobs)
            self.set(layer.tops[0], shape[:axis] + [n])
        elif t == "Embed":
            p = layer.param("embed_param")
            n, vocab = p.int("num_output"), p.int("input_dim")
            blobs = [[vocab, n]] + ([[n]] if p.bool("bias_term", True) else [])
            self.learn(layer, blobs)
            self.set(layer.tops[0], self.bottom(layer) + [n])
        elif t == "Pooling":
            self.pooling(layer)
        elif t in SAME_SHAPE:
            shape = self.bottom(layer)
            self.same_shape_blobs(layer, shape)
            for top in layer.tops:
                self.set(top, shape)
        elif t == "Split":
            for top in layer.tops:
                self.set(top, self.bottom(layer))
        elif t == "Silence":
            for i in range(len(layer.bottoms)):
                self.bottom(layer, i)
        elif t == "Axpy":
            a, x, y = (self.bottom(layer, i) for i in range(3))
            if x != y or a[:2] != x[:2] or count(a[2:]) != 1:
                raise ZooError(f"bottoms {a}, {x}, {y}: expected a [N,C,1,1] scale and two equal blobs")
            self.set(layer.tops[0], x)
        elif t == "Eltwise":
            shapes = [self.bottom(layer, i) for i in range(len(layer.bottoms))]
            if any(s != shapes[0] for s in shapes):
                raise ZooError(f"bottom shapes differ: {shapes}")
            self.set(layer.tops[0], shapes[0])
        elif t == "Concat":
            p = layer.param("concat_param")
            shapes = [self.bottom(layer, i) for i in range(len(layer.bottoms))]
            axis = p.int("axis", p.int("concat_dim", 1))
            axis = norm_axis(axis, len(shapes[0]), "axis")
            out = list(shapes[0])
            for s in shapes[1:]:
                if len(s) != len(out) or s[:axis] + s[axis + 1:] != out[:axis] + out[axis + 1:]:
                    raise ZooError(f"bottom shapes {shapes} differ off axis {axis}")
                out[axis] += s[axis]
            self.set(layer.tops[0], out)
        elif t == "Slice":
            self.slice(layer)
        elif t == "Permute":
            shape = self.bottom(layer)
            order = layer.param("permute_param").ints("order")
            order += [a for a in range(len(shape)) if a not in order]
            if sorted(order) != list(range(len(shape))):
                raise ZooError(f"order {order} is not a permutation of {len(shape)} axes")
            self.set(layer.tops[0], [shape[a] for a in order])
        elif t == "Flatten":
            p = layer.param("flatten_param")
            shape = self.bottom(layer)
            start = norm_axis(p.int("axis", 1), len(shape), "axis")
            end = norm_axis(p.int("end_axis", -1), len(shape), "end_axis")
            self.set(layer.tops[0], shape[:start] + [count(shape[start:end + 1])] + shape[end + 1:])
        elif t == "Reshape":
            self.reshape(layer)
        elif t == "PriorBox":
            self.prior_box(layer)
        elif t in DETECTION_OUTPUTS:
            for i in range(len(layer.bottoms)):
                self.bottom(layer, i)
            for top in layer.tops:
                self.set(top, [1, 1, 1, 7])
        elif t == "Upsample":
            n, c, h, w = self.nchw(layer)
            p = layer.param("upsample_param")
            if p.int("upsample_h") is not None and p.int("upsample_w") is not None:
                oh, ow = p.int("upsample_h"), p.int("upsample_w")
            else:
                both = p.int("stride", p.int("scale", 2))
                sh = p.int("stride_h", p.int("scale_h", both))
                sw = p.int("stride_w", p.int("scale_w", both))
                oh, ow = h * sh, w * sw
            self.set(layer.tops[0], [n, c, oh, ow])
        elif t == "Interp":
            self.interp(layer)
        elif t == "Crop":
            a, b = self.bottom(layer, 0), self.bottom(layer, 1)
            axis = norm_axis(layer.param("crop_param").int("axis", 2), len(a), "axis")
            self.set(layer.tops[0], a[:axis] + b[axis:])
        elif t == "Reorg":
            n, c, h, w = self.nchw(layer)
            s = layer.param("reorg_param").int("stride", 2)
            if h % s or w % s:
                raise ZooError(f"{h}x{w} is not divisible by stride {s}")
            self.set(layer.tops[0], [n, c * s * s, h // s, w // s])
        elif t == "ArgMax":
            p = layer.param("argmax_param")
            shape = self.bottom(layer)
            k = p.int("top_k", 1)
            if p.get("axis") is not None:
                axis = norm_axis(p.int("axis"), len(shape), "axis")
                self.set(layer.tops[0], shape[:axis] + [k] + shape[axis + 1:])
            else:
                self.set(layer.tops[0], [shape[0], 2 if p.bool("out_max_val", False) else 1, k])
        elif t == "Tile":
            p = layer.param("tile_param")
            shape = list(self.bottom(layer))
            axis = norm_axis(p.int("axis", 1), len(shape), "axis")
            shape[axis] *= p.int("tiles", 1)
            self.set(layer.tops[0], shape)
        else:
            raise ZooError(f"cannot propagate shapes through layer type {t!r}")

    def same_shape_blobs(self, layer, shape):
        """Learned blobs of the shape-keeping layers that have them."""
        t = layer.type
        c = shape[1] if len(shape) > 1 else 1
        if t == "BatchNorm":
            self.learn(layer, [[c], [c], [1]])
        elif t == "PReLU":
            shared = layer.param("prelu_param").bool("channel_shared", False)
            self.learn(layer, [[1] if shared else [c]])
        elif t == "Normalize":
            shared = layer.param("norm_param").bool("channel_shared", True)
            self.learn(layer, [[1] if shared else [c]])
        elif t in ("Scale", "Bias"):
            p = layer.param("scale_param" if t == "Scale" else "bias_param")
            if len(layer.bottoms) > 1:
                # The scale (or bias) is bottom 1; Scale may still learn a bias of its shape.
                other = self.bottom(layer, 1)
                if t == "Scale" and p.bool("bias_term", False):
                    self.learn(layer, [list(other)])
                return
            axis = norm_axis(p.int("axis", 1), len(shape), "axis")
            num_axes = p.int("num_axes", 1)
            param_shape = shape[axis:] if num_axes == -1 else shape[axis:axis + num_axes]
            blobs = [list(param_shape)]
            if t == "Scale" and p.bool("bias_term", False):
                blobs.append(list(param_shape))
            self.learn(layer, blobs)
        elif t == "ShuffleChannel":
            g = layer.param("shuffle_channel_param").int("group", 1)
            if c % g:
                raise ZooError(f"{c} channels are not divisible by group {g}")

    def convolution(self, layer):
        p = layer.param("convolution_param")
        n, c, h, w = self.nchw(layer)
        out = p.int("num_output")
        if out is None:
            raise ZooError("no convolution_param.num_output")
        if p.int("axis", 1) != 1:
            raise ZooError("only axis 1 (N,C,H,W) is supported")
        if layer.type in ("ConvolutionDepthwise", "DepthwiseConvolution"):
            group = out  # one group per channel, as MobileNet/ShuffleNet ports define it
        else:
            group = max(p.int("group", 1), 1)
        kh, kw = kernel(p)
        if kh is None or kw is None:
            raise ZooError("no kernel_size (or kernel_h and kernel_w)")
        sh, sw = pair(p, "stride", 1)
        ph, pw = pair(p, "pad", 0)
        dh, dw = pair(p, "dilation", 1)
        if c % group or out % group:
            raise ZooError(f"group {group} does not divide {c} input and {out} output channels")
        ekh, ekw = dh * (kh - 1) + 1, dw * (kw - 1) + 1
        if layer.type == "Deconvolution":
            weight = [c, out // group, kh, kw]
            oh, ow = sh * (h - 1) + ekh - 2 * ph, sw * (w - 1) + ekw - 2 * pw
        else:
            weight = [out, c // group, kh, kw]
            oh, ow = (h + 2 * ph - ekh) // sh + 1, (w + 2 * pw - ekw) // sw + 1
        if oh <= 0 or ow <= 0:
            raise ZooError(f"output {oh}x{ow} from input {h}x{w}")
        self.learn(layer, [weight] + ([[out]] if p.bool("bias_term", True) else []))
        self.set(layer.tops[0], [n, out, oh, ow])

    def pooling(self, layer):
        p = layer.param("pooling_param")
        n, c, h, w = self.nchw(layer)
        if p.bool("global_pooling", False):
            self.set(layer.tops[0], [n, c, 1, 1])
            return
        kh, kw = kernel(p)
        if kh is None or kw is None:
            raise ZooError("no kernel_size (or kernel_h and kernel_w), and not global_pooling")
        sh, sw = pair(p, "stride", 1)
        ph, pw = pair(p, "pad", 0)
        floor = p.get("round_mode") in ("FLOOR", "1") or p.bool("ceil_mode", True) is False

        def size(x, k, s, pad):
            span = x + 2 * pad - k
            o = (span // s if floor else -(-span // s)) + 1
            # Caffe clips the last window so it starts inside the padded input.
            if pad > 0 and (o - 1) * s >= x + pad:
                o -= 1
            return o

        oh, ow = size(h, kh, sh, ph), size(w, kw, sw, pw)
        if oh <= 0 or ow <= 0:
            raise ZooError(f"output {oh}x{ow} from input {h}x{w}")
        self.set(layer.tops[0], [n, c, oh, ow])

    def slice(self, layer):
        p = layer.param("slice_param")
        shape = self.bottom(layer)
        axis = norm_axis(p.int("axis", p.int("slice_dim", 1)), len(shape), "axis")
        points = p.ints("slice_point")
        total, k = shape[axis], len(layer.tops)
        if points:
            if len(points) != k - 1:
                raise ZooError(f"{len(points)} slice_point(s) for {k} tops")
            bounds = [0] + points + [total]
        else:
            if total % k:
                raise ZooError(f"{total} is not divisible into {k} equal slices")
            bounds = [i * total // k for i in range(k + 1)]
        for top, lo, hi in zip(layer.tops, bounds, bounds[1:]):
            if hi <= lo:
                raise ZooError(f"slice points {points} do not increase within {total}")
            self.set(top, shape[:axis] + [hi - lo] + shape[axis + 1:])

    def reshape(self, layer):
        p = layer.param("reshape_param")
        shape = self.bottom(layer)
        dims = [to_int(d, "shape.dim") for d in p.msg("shape").all("dim")]
        axis = p.int("axis", 0)
        axis = axis + len(shape) + 1 if axis < 0 else axis
        num_axes = p.int("num_axes", -1)
        end = len(shape) if num_axes == -1 else axis + num_axes
        replaced = shape[axis:end]
        out = []
        for i, d in enumerate(dims):
            if d == 0:
                if i >= len(replaced):
                    raise ZooError(f"dim {i} is 0 but the bottom has no axis {axis + i}")
                out.append(replaced[i])
            else:
                out.append(d)
        if out.count(-1) > 1:
            raise ZooError("more than one -1 in reshape_param.shape")
        result = shape[:axis] + out + shape[end:]
        if -1 in result:
            known = count(d for d in result if d != -1)
            if count(shape) % known:
                raise ZooError(f"{shape} cannot be reshaped to {result}")
            result[result.index(-1)] = count(shape) // known
        if count(result) != count(shape):
            raise ZooError(f"{shape} ({count(shape)} elements) cannot be reshaped to {result}")
        self.set(layer.tops[0], result)

    def prior_box(self, layer):
        p = layer.param("prior_box_param")
        n, c, h, w = self.nchw(layer)
        min_sizes, max_sizes = p.floats("min_size"), p.floats("max_size")
        if not min_sizes:
            raise ZooError("no prior_box_param.min_size")
        ratios = [1.0]
        for ar in p.floats("aspect_ratio"):
            if any(abs(ar - r) < 1e-6 for r in ratios):
                continue
            ratios.append(ar)
            if p.bool("flip", True):
                ratios.append(1.0 / ar)
        num_priors = len(ratios) * len(min_sizes) + len(max_sizes)
        self.set(layer.tops[0], [1, 2, h * w * num_priors * 4])

    def interp(self, layer):
        """PSPNet's Interp: an explicit size, a zoom and/or shrink factor, or bottom 1's size."""
        p = layer.param("interp_param")
        n, c, h, w = self.nchw(layer)
        h_in = h + p.int("pad_beg", 0) + p.int("pad_end", 0)
        w_in = w + p.int("pad_beg", 0) + p.int("pad_end", 0)
        zoom, shrink = p.int("zoom_factor"), p.int("shrink_factor")
        height, width = p.int("height"), p.int("width")
        if shrink is not None or zoom is not None:
            oh, ow = h_in, w_in
            if shrink is not None:
                oh, ow = (oh - 1) // shrink + 1, (ow - 1) // shrink + 1
            if zoom is not None:
                oh, ow = oh + (oh - 1) * (zoom - 1), ow + (ow - 1) * (zoom - 1)
        elif height is not None and width is not None:
            oh, ow = height, width
        elif len(layer.bottoms) > 1:
            oh, ow = self.bottom(layer, 1)[2:4]
        else:
            raise ZooError("no size: expected height/width, zoom_factor, shrink_factor or a second bottom")
        self.set(layer.tops[0], [n, c, oh, ow])


# ---------------------------------------------------------------- main


def convert(prototxt_path, caffemodel_path, show_shapes=False):
    writer = load_writer()
    with open(prototxt_path, encoding="utf-8") as f:
        name, inputs, layers = read_net(f.read())
    net = Net()
    net.run(inputs, layers)
    if show_shapes:
        for top, shape in net.order:
            print(f"  {top}: {shape}")
    net_name = name or os.path.splitext(os.path.basename(prototxt_path))[0]
    data = writer.caffemodel(net_name, net.learned)
    want = {}
    for lname, _, _, _, blobs in net.learned:
        if lname in want:
            raise ZooError(f"two layers named {lname!r} have learned blobs")
        want[lname] = [list(b) for b in blobs]
    if writer.decoded_shapes(data) != want:
        raise ZooError("the written caffemodel's blob shapes do not read back")
    with open(caffemodel_path, "wb") as f:
        f.write(data)
    kinds = {}
    for layer in layers:
        kinds[layer.type] = kinds.get(layer.type, 0) + 1
    print(f"{prototxt_path}: {len(layers)} layers, {len(net.learned)} with learned blobs")
    by_count = sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))
    print("  types: " + ", ".join(f"{t} {n}" for t, n in by_count))
    unread = {}  # blob → True while no later layer reads it (in-place layers do not count)
    for layer in layers:
        for b in layer.bottoms:
            if b not in layer.tops:
                unread[b] = False
        for t in layer.tops:
            unread[t] = True
    outputs = [(t, net.shapes[t]) for t, last in unread.items() if last and t in net.shapes]
    print("  outputs: " + ", ".join(f"{t} {s}" for t, s in outputs))
    print(f"  wrote {caffemodel_path}: {len(data)} bytes, blob shapes read back")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prototxt", help="the deploy net, Caffe text format")
    parser.add_argument("caffemodel", help="where to write the binary NetParameter")
    parser.add_argument("--shapes", action="store_true", help="print every top's shape")
    args = parser.parse_args()
    try:
        convert(args.prototxt, args.caffemodel, args.shapes)
    except ZooError as err:
        sys.exit(f"caffe-zoo: {args.prototxt}: {err}")
    except OSError as err:
        sys.exit(f"caffe-zoo: {err}")


if __name__ == "__main__":
    main()
