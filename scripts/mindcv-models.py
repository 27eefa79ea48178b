#!/usr/bin/env python3
"""Writes public MindCV networks as the MindIR files tunebank's MindSpore importer reads (and,
with `--onnx`, MindSpore's own ONNX exports of them), to try it on networks nobody here wrote
(random weights; shapes only are read).

Usage (MindSpore in a venv of its own, as for fixtures/models/frameworks/make_mindir.py):

    python3 -m venv /tmp/msvenv && /tmp/msvenv/bin/pip install mindspore mindcv
    /tmp/msvenv/bin/python scripts/mindcv-models.py OUT_DIR [--size 224] [--onnx] [MODEL ...]

MODEL is any name `mindcv.create_model` takes; by default resnet50, mobilenet_v2_100,
mobilenet_v3_large_100, shufflenet_v2_x1_0, efficientnet_b0, densenet121, squeezenet1_0 and
vit_b_32_224. For each, OUT_DIR gets `<model>.mindir` (`mindspore.export(...,
file_format="MINDIR")`, inference mode, batch 1) and with `--onnx` `<model>.onnx` where
MindSpore's exporter supports every op of the network (it refuses HSwish, InplaceAddExt and
Unstack, for one). Then

    tunebank convert --framework=1 --model=OUT_DIR/<model>.mindir --soc_version=Ascend910B2

shows what imports (`tunebank: skipped …` lines name what does not, with what it cut off), and
the same command on the `.onnx` gives the keys to compare.
"""

import argparse
import os

DEFAULT = [
    "resnet50",
    "mobilenet_v2_100",
    "mobilenet_v3_large_100",
    "shufflenet_v2_x1_0",
    "efficientnet_b0",
    "densenet121",
    "squeezenet1_0",
    "vit_b_32_224",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("models", nargs="*", default=DEFAULT)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--onnx", action="store_true")
    args = ap.parse_args()

    import mindcv
    import mindspore as ms
    import numpy as np

    ms.set_context(mode=ms.GRAPH_MODE)
    os.makedirs(args.out, exist_ok=True)
    x = ms.Tensor(np.zeros((1, 3, args.size, args.size), np.float32))
    formats = ["MINDIR"] + (["ONNX"] if args.onnx else [])
    for name in args.models:
        net = mindcv.create_model(name, pretrained=False, num_classes=1000)
        net.set_train(False)
        for fmt in formats:
            try:
                ms.export(net, x, file_name=os.path.join(args.out, name), file_format=fmt)
                print(f"{name}.{fmt.lower()}: written", flush=True)
            except RuntimeError as e:
                print(f"{name}.{fmt.lower()}: MindSpore cannot export it: {str(e).splitlines()[0]}")


if __name__ == "__main__":
    main()
