"""Writes torchvision networks (random weights) as PyTorch programs for tunebank, to try the
`.pt2` reader and tunebank.torch on networks nobody here wrote:

    python scripts/torchvision-models.py OUT [resnet50 mobilenet_v2 ...] [--batch N] [--onnx]

For each network: OUT/<net>.pt2 (torch.export of the eval-mode forward, 224×224 input),
OUT/<net>_step.pt2 (one training step as tunebank.torch.capture writes it: cross-entropy,
backward, SGD with momentum) and, with --onnx, OUT/<net>.onnx (torch.onnx.export of the same
forward). Needs torch, torchvision (and onnx, onnxscript for --onnx) and the tunebank package
(pip install ./python[torch]).
"""

import argparse
import os

import torch
import torch.nn.functional as F
import torchvision

import tunebank.torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("nets", nargs="*", default=["resnet50"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--onnx", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    for name in args.nets:
        model = getattr(torchvision.models, name)(weights=None)
        # Batch norms as training leaves them (not the identity torchvision initialises them
        # to), so torch.onnx.export folds each into its convolution with a bias, as it does a
        # trained network's.
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                for t in (m.weight, m.bias, m.running_mean):
                    t.data.uniform_(-0.5, 0.5)
                m.running_var.data.uniform_(0.5, 1.5)
        x = torch.randn(args.batch, 3, 224, 224)
        model.eval()
        torch.export.save(torch.export.export(model, (x,)), os.path.join(args.out, f"{name}.pt2"))
        if args.onnx:
            torch.onnx.export(model, (x,), os.path.join(args.out, f"{name}.onnx"), dynamo=True,
                              external_data=False)
        model.train()
        y = torch.randint(0, 1000, (args.batch,))
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        step = tunebank.torch.capture(model, (x,), loss_fn=F.cross_entropy, target=y,
                                      optimizer=opt, name=f"{name}_step")
        with open(os.path.join(args.out, f"{name}_step.pt2"), "wb") as f:
            f.write(step)
        print(name, "written")


if __name__ == "__main__":
    main()
