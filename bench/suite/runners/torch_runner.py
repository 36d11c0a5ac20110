"""PyTorch: eager mode and torch.compile (inductor), torch.optim.Adam, NCHW for LeNet."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from suite import data as bench_data
from suite.measure import time_steps
from suite.runners import cross_entropy, layouts, result

VERSION = f"torch {torch.__version__}"


def _set_threads(threads: int) -> None:
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set in this process
        pass


def build_model(w: dict, weights: list) -> torch.nn.Module:
    if w["model"] == "mlp":
        sizes = w["sizes"]
        layers = []
        for i in range(len(sizes) - 1):
            layers += [torch.nn.Linear(sizes[i], sizes[i + 1]), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers[:-1])
        dense = [m for m in model if isinstance(m, torch.nn.Linear)]
        convs = []
    else:
        model = torch.nn.Sequential(
            torch.nn.Conv2d(1, 6, 5, padding=2),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(6, 16, 5),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Flatten(),
            torch.nn.Linear(400, 120),
            torch.nn.ReLU(),
            torch.nn.Linear(120, 84),
            torch.nn.ReLU(),
            torch.nn.Linear(84, 10),
        )
        convs = [model[0], model[3]]
        dense = [model[7], model[9], model[11]]
        weights = list(weights)
        weights[4] = layouts.fc_after_chw_flatten(weights[4])
    with torch.no_grad():
        for i, conv in enumerate(convs):
            conv.weight.copy_(torch.from_numpy(layouts.conv_oihw(weights[2 * i])))
            conv.bias.copy_(torch.from_numpy(weights[2 * i + 1]))
        for i, lin in enumerate(dense, start=len(convs)):
            lin.weight.copy_(torch.from_numpy(weights[2 * i].T.copy()))
            lin.bias.copy_(torch.from_numpy(weights[2 * i + 1]))
    return model


def batches(w: dict, d: dict) -> list:
    out = []
    for i in range(bench_data.N_BATCHES):
        x, y = bench_data.batch(d, w, i)
        x = layouts.images_nchw(x) if w["model"] == "lenet" else x
        out.append((torch.from_numpy(x.copy()), torch.from_numpy(y.astype("int64"))))
    return out


def _run(w: dict, d: dict, threads: int, plan, compiled: bool) -> list[dict]:
    _set_threads(threads)
    model = build_model(w, d["weights"])
    net = torch.compile(model) if compiled else model
    data = batches(w, d)
    n = len(data)
    if w["mode"] == "train":
        opt = torch.optim.Adam(model.parameters(), lr=w["lr"], eps=1e-8)

        def step(i):
            x, y = data[i % n]
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            return loss

        loss1 = float(step(0))
    else:

        def step(i):
            with torch.inference_mode():
                return torch.softmax(net(data[i % n][0]), dim=-1)

        loss1 = cross_entropy(step(0).numpy(), data[0][1].numpy())
    timing = time_steps(step, lambda out: None, plan)
    label = "torch.compile" if compiled else "PyTorch eager"
    return [result(label, timing, loss1, VERSION)]


RUNNERS = {
    "torch": lambda w, d, t, p: _run(w, d, t, p, compiled=False),
    "torch_compile": lambda w, d, t, p: _run(w, d, t, p, compiled=True),
}
