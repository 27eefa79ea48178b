#!/usr/bin/env python3
"""Writes public Keras applications as the frozen graphs tunebank's TensorFlow importer reads,
to try it on networks nobody here wrote (random weights; shapes only are read).

Usage (TensorFlow in a venv of its own, as for fixtures/models/training/make_training.py):

    python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install tensorflow-cpu
    /tmp/tfvenv/bin/python scripts/keras-apps.py OUT_DIR [--size 96] [--batch 2] [--onnx] [--tf-keras] [APP ...]

APP is any of MobileNetV2, EfficientNetB0, DenseNet121, ResNet50, Transformer (a Keras
encoder block: MultiHeadAttention, LayerNormalization, a GELU feed-forward) and DeepLabV3Plus
(keras.io's segmentation example: dilated ASPP, bilinear upsampling; give --size 128; its
inference graph only); all but DeepLabV3Plus by default.
For each, OUT_DIR gets

- `<app>.pb`: the inference graph, frozen by TensorFlow's `convert_variables_to_constants_v2`
  (as a converter's user exports it), float constants kept as dtype and dims only;
- `<app>_step.pb`: one training step as `tunebank.tf` hands it to the tuner (the forward pass
  under a `GradientTape`, sparse softmax cross-entropy, the gradients, Adam's updates), with
  the variables as shaped `VarHandleOp`s (make_training.py's `frozen_to_shapes`);

- with `--onnx` (tf2onnx in the venv too), `<app>.onnx`: tf2onnx's export (opset 17) of the
  inference graph frozen with its weights, as a user exports it, for comparing keys;

With `--tf-keras` (`pip install tf_keras` in the venv too) the models are built by Keras 2 (the
tf_keras package) and the step uses its fused Adam (`ResourceApplyAdam`); the files are named
`tf_keras_<app>…`.

then `tunebank convert --framework=3 --model=OUT_DIR/<app>.pb --soc_version=Ascend910B2`
shows what imports (`tunebank: skipped …` lines name what does not, with what it cut off).
"""

import argparse
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAKE_TRAINING = os.path.join(ROOT, "fixtures", "models", "training", "make_training.py")


def make_training():
    """make_training.py as a module, for its `strip` and `adam_step`."""
    spec = importlib.util.spec_from_file_location("make_training", MAKE_TRAINING)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def keras_module(tf_keras):
    """Keras 3 (`keras`) or Keras 2 as the `tf_keras` package."""
    if tf_keras:
        import tf_keras as keras
    else:
        import keras
    return keras


def transformer(size, tf_keras=False):
    """One Transformer encoder block over `size` tokens of width 64 (4 heads), pooled and
    classified: the patterns of Keras's own encoder examples."""
    keras = keras_module(tf_keras)

    layers = keras.layers
    x_in = keras.Input((size, 64))
    att = layers.MultiHeadAttention(num_heads=4, key_dim=16, name="mha")(x_in, x_in)
    x = layers.LayerNormalization(epsilon=1e-6, name="ln1")(x_in + att)
    ff = layers.Dense(128, activation="gelu", name="ff1")(x)
    ff = layers.Dense(64, name="ff2")(ff)
    x = layers.LayerNormalization(epsilon=1e-6, name="ln2")(x + ff)
    x = layers.GlobalAveragePooling1D(name="pool")(x)
    return keras.Model(x_in, layers.Dense(10, name="head")(x), name="transformer")


def deeplab_v3_plus(size, tf_keras=False):
    """DeepLabV3+ as keras.io's "Multiclass semantic segmentation using DeepLabV3+" builds it:
    a ResNet50 backbone, ASPP with dilation rates 1, 6, 12 and 18 (TensorFlow writes a dilated
    convolution as SpaceToBatchND, Conv2D, BatchToSpaceND) and bilinear upsampling
    (ResizeBilinear), 8 classes."""
    keras = keras_module(tf_keras)
    layers = keras.layers

    def block(x, filters=256, k=3, rate=1, bias=False):
        x = layers.Conv2D(filters, k, dilation_rate=rate, padding="same", use_bias=bias)(x)
        return layers.Activation("relu")(layers.BatchNormalization()(x))

    def up(x, to):
        return layers.UpSampling2D(size=(to // x.shape[1], to // x.shape[2]), interpolation="bilinear")(x)

    inp = keras.Input((size, size, 3))
    backbone = keras.applications.ResNet50(weights=None, include_top=False, input_tensor=inp)
    x = backbone.get_layer("conv4_block6_2_relu").output
    pooled = block(layers.AveragePooling2D(pool_size=(x.shape[1], x.shape[2]))(x), k=1, bias=True)
    branches = [up(pooled, x.shape[1])]
    branches += [block(x, k=1 if r == 1 else 3, rate=r) for r in (1, 6, 12, 18)]
    x = block(layers.Concatenate()(branches), k=1)
    low = block(backbone.get_layer("conv2_block3_2_relu").output, filters=48, k=1)
    x = block(block(layers.Concatenate()([up(x, size // 4), low])))
    out = layers.Conv2D(8, 1, padding="same")(up(x, size))
    return keras.Model(inp, out, name="deeplabv3plus")


def application(name, size, tf_keras=False):
    keras = keras_module(tf_keras)

    if name == "Transformer":
        model, shape = transformer(size, tf_keras), (size, 64)
    elif name == "DeepLabV3Plus":
        model, shape = deeplab_v3_plus(size, tf_keras), (size, size, 3)
    else:
        build = getattr(keras.applications, name)
        model, shape = build(weights=None, input_shape=(size, size, 3), classes=10), (size, size, 3)
    randomize(model)
    return model, shape


def randomize(model):
    """Weights as a trained model has them: nonzero everywhere (a fresh batch norm's zero
    shift would let tf2onnx drop the bias that a trained one's folds into), variances positive."""
    import numpy as np

    rng = np.random.default_rng(7)
    model.set_weights([np.abs(rng.standard_normal(w.shape)).astype(w.dtype) + 0.1 for w in model.get_weights()])


def frozen(mt, model, shape, batch, strip=True):
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    @tf.function
    def infer(x):
        return model(x, training=False)

    concrete = infer.get_concrete_function(tf.TensorSpec((batch,) + shape, tf.float32, name="input"))
    gd = convert_variables_to_constants_v2(concrete).graph.as_graph_def()
    return mt.strip(gd) if strip else gd


def onnx_export(gd, path):
    """tf2onnx's export of a frozen graph with its weights (its constant folding needs them)."""
    import tf2onnx

    outputs = [gd.node[-1].name + ":0"]
    used = {i.split(":")[0].lstrip("^") for n in gd.node for i in n.input}
    outputs = [n.name + ":0" for n in gd.node if n.name not in used and n.op != "NoOp"][-1:] or outputs
    model, _ = tf2onnx.convert.from_graph_def(gd, input_names=["input:0"], output_names=outputs, opset=17)
    with open(path, "wb") as f:
        f.write(model.SerializeToString())


def step(mt, model, shape, batch, tf_keras=False):
    if not tf_keras:
        return mt.adam_step(model, [batch, *shape])
    return mt.legacy_adam_step(model, [batch, *shape])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("apps", nargs="*")
    p.add_argument("--size", type=int, default=96)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--onnx", action="store_true")
    p.add_argument("--tf-keras", action="store_true", help="Keras 2 (the tf_keras package) with its fused Adam")
    args = p.parse_intermixed_args()
    mt = make_training()
    apps = args.apps or ["MobileNetV2", "EfficientNetB0", "DenseNet121", "ResNet50", "Transformer"]
    os.makedirs(args.out, exist_ok=True)
    for name in apps:
        model, shape = application(name, 16 if name == "Transformer" else args.size, args.tf_keras)
        prefix = "tf_keras_" if args.tf_keras else ""
        graphs = [("", frozen(mt, model, shape, args.batch))]
        # The steps train a classifier on sparse labels; the segmentation net is inference only.
        if name != "DeepLabV3Plus":
            graphs.append(("_step", step(mt, model, shape, args.batch, args.tf_keras)))
        for kind, gd in graphs:
            path = os.path.join(args.out, f"{prefix}{name.lower()}{kind}.pb")
            with open(path, "wb") as f:
                f.write(gd.SerializeToString(deterministic=True))
            print(f"wrote {path}: {len(gd.node)} nodes")
        if args.onnx:
            path = os.path.join(args.out, f"{prefix}{name.lower()}.onnx")
            onnx_export(frozen(mt, model, shape, args.batch, strip=False), path)
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
