#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""guest-init/interp/ember_display.py without a kernel: the `data` of
DataFrames and the `chart` of matplotlib figures (Agg), field by field,
with the values E2B's own chart tests expect, and its IPython formatters
on a real InteractiveShell.  Prints "ok - ..." / "not ok - ..." lines;
exits 1 if any failed.

Run with Debian's /usr/bin/python3 (numpy, pandas, matplotlib, IPython):
tests/integration/interp_display.sh does.
"""
import contextlib
import datetime
import io
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "guest-init", "interp"))

import matplotlib                                       # noqa: E402
matplotlib.use("Agg")
import matplotlib.pyplot as plt                         # noqa: E402
import numpy as np                                      # noqa: E402
import pandas as pd                                     # noqa: E402

import ember_display as ed                              # noqa: E402

failed = 0

CHART = {"type", "title", "elements"}
CHART2D = CHART | {"x_label", "y_label", "x_unit", "y_unit"}
POINT = CHART2D | {"x_ticks", "x_tick_labels", "x_scale", "y_ticks",
                   "y_tick_labels", "y_scale"}
KEYS = {"line": POINT, "scatter": POINT, "bar": CHART2D,
        "box_and_whisker": CHART2D, "pie": CHART, "superchart": CHART,
        "unknown": CHART}
ELEMENT_KEYS = {"line": {"label", "points"}, "scatter": {"label", "points"},
                "bar": {"label", "group", "value"},
                "pie": {"label", "angle", "radius"},
                "box_and_whisker": {"label", "min", "first_quartile",
                                    "median", "third_quartile", "max",
                                    "outliers"}}


def check(name, cond, detail=None):
    global failed
    if cond:
        print("ok - interp_display: %s" % name)
    else:
        failed += 1
        print("not ok - interp_display: %s" % name)
        for line in json.dumps(detail, default=repr)[:3000].splitlines():
            print("#   %s" % line)
    sys.stdout.flush()


def shape_ok(chart):
    """Every key of its type present, no other, elements' too, and
    strict JSON."""
    if not isinstance(chart, dict) or set(chart) != KEYS.get(
            chart.get("type")):
        return False
    json.dumps(chart, allow_nan=False)
    if chart["type"] == "superchart":
        return all(shape_ok(c) for c in chart["elements"])
    want = ELEMENT_KEYS.get(chart["type"], set())
    return all(set(e) == want for e in chart["elements"])


def chart_of(fig):
    """The chart of @fig, never drawn before (as in a kernel without
    the PNG formatter), then closed."""
    try:
        return ed.figure_chart(fig)
    finally:
        plt.close(fig)


def is_float_list(xs):
    return all(type(x) is float for x in xs)


def line_chart():
    dates = [datetime.date(2023, 9, 1) + datetime.timedelta(seconds=i)
             for i in range(100)]
    x = np.linspace(0, 2 * np.pi, 100)
    fig = plt.figure(figsize=(10, 6))
    plt.plot(dates, np.sin(x), label="sin(x)")
    plt.plot(dates, np.cos(x), label="cos(x)")
    plt.xlabel("Time (s)")
    plt.ylabel("Amplitude (Hz)")
    plt.title("Plot of sin(x) and cos(x)")
    c = chart_of(fig)
    check("line: all keys, strict JSON", shape_ok(c), c)
    c = c or {}
    check("line: type, title, labels, units s and Hz",
          c.get("type") == "line"
          and c.get("title") == "Plot of sin(x) and cos(x)"
          and c.get("x_label") == "Time (s)"
          and c.get("y_label") == "Amplitude (Hz)"
          and c.get("x_unit") == "s" and c.get("y_unit") == "Hz", c)
    xt = c.get("x_ticks") or [None]
    check("line: datetime x ticks as ISO strings, float y ticks, "
          "string tick labels",
          c.get("x_scale") == "datetime" and c.get("y_scale") == "linear"
          and all(isinstance(t, str) for t in xt)
          and isinstance(datetime.datetime.fromisoformat(str(xt[0])),
                         datetime.datetime)
          and c.get("y_ticks") and is_float_list(c["y_ticks"])
          and all(isinstance(t, str) for t in
                  c.get("x_tick_labels", []) + c.get("y_tick_labels", []))
          and any(c.get("y_tick_labels", [])), c)
    els = c.get("elements", [])
    pts = [e.get("points", []) for e in els]
    check("line: 2 lines of 100 points, date strings and floats",
          [e.get("label") for e in els] == ["sin(x)", "cos(x)"]
          and [len(p) for p in pts] == [100, 100]
          and all(isinstance(x, str) and type(y) is float
                  for p in pts for x, y in p)
          and datetime.datetime.fromisoformat(pts[0][0][0])
          == datetime.datetime(2023, 9, 1), els and els[0])


def bar_chart():
    fig = plt.figure(figsize=(10, 6))
    plt.bar(["Author A", "Author B", "Author C", "Author D"],
            [100, 200, 300, 400], label="Books Sold", color="blue")
    plt.xlabel("Authors")
    plt.ylabel("Number of Books Sold")
    plt.title("Book Sales by Authors")
    plt.tight_layout()
    c = chart_of(fig)
    check("bar: all keys, strict JSON", shape_ok(c), c)
    c = c or {}
    els = c.get("elements", [])
    check("bar: 4 bars 100..400, labels, group Books Sold, no units",
          c.get("type") == "bar" and c.get("title") == "Book Sales by Authors"
          and c.get("x_label") == "Authors"
          and c.get("y_label") == "Number of Books Sold"
          and c.get("x_unit") is None and c.get("y_unit") is None
          and [e["value"] for e in els] == [100, 200, 300, 400]
          and [e["label"] for e in els]
          == ["Author A", "Author B", "Author C", "Author D"]
          and [e["group"] for e in els] == ["Books Sold"] * 4, c)

    fig, ax = plt.subplots()
    ax.barh(["x", "y", "z"], [3, 3, 5])
    ax.barh(["x", "y", "z"], [1, 2, 1], left=[3, 3, 5], label="more")
    ax.set_xlabel("Count [n]")
    ax.set_ylabel("Item")
    c = chart_of(fig) or {}
    els = c.get("elements", [])
    check("bar: horizontal bars: labels from the y axis, values the "
          "widths, x/y swapped, unnamed group 'Group 0'",
          shape_ok(c) and c.get("x_label") == "Item"
          and c.get("y_label") == "Count [n]" and c.get("y_unit") == "n"
          and c.get("x_unit") is None
          and [(e["label"], e["group"], e["value"]) for e in els]
          == [("x", "Group 0", 3), ("y", "Group 0", 3), ("z", "Group 0", 5),
              ("x", "more", 1), ("y", "more", 2), ("z", "more", 1)], c)

    fig, ax = plt.subplots()
    ax.bar([0, 1, 2], [2, 2, 2])
    c = chart_of(fig) or {}
    check("bar: vertical bars of equal heights stay vertical",
          [(e["label"], e["value"]) for e in c.get("elements", [])]
          == [("0.0", 2), ("1.0", 2), ("2.0", 2)]
          or [(e["label"], e["value"]) for e in c.get("elements", [])]
          == [("0", 2), ("1", 2), ("2", 2)], c)


def pie_chart():
    fig, ax = plt.subplots(figsize=(8, 8))
    plt.xlabel("x")
    plt.ylabel("y")
    ax.pie([90, 10], labels=["No", "No, in blue"], autopct="%1.1f%%",
           startangle=90, colors=plt.cm.Pastel1.colors[:2])
    ax.axis("equal")
    plt.title("Will I wake up early tomorrow?")
    c = chart_of(fig)
    check("pie: only type, title, elements; strict JSON", shape_ok(c), c)
    c = c or {}
    check("pie: angles 324 and 36, radius 1, labels",
          c.get("type") == "pie"
          and c.get("title") == "Will I wake up early tomorrow?"
          and [(e["label"], e["angle"], e["radius"])
               for e in c.get("elements", [])]
          == [("No", 324, 1), ("No, in blue", 36, 1)], c)


BOX_DATA = {"Class A": [85, 90, 78, 92, 88],
            "Class B": [95, 89, 76, 91, 84, 87],
            "Class C": [75, 82, 88, 79, 86]}
BOX_WANT = {"label": ["Class A", "Class B", "Class C"],
            "outliers": [[], [76], []], "min": [78, 84, 75],
            "first_quartile": [85, 84.75, 79], "median": [88, 88, 82],
            "third_quartile": [90, 90.5, 86], "max": [92, 95, 88]}


def box_chart():
    fig, ax = plt.subplots(figsize=(10, 6))
    ax.set_title("Exam Scores Distribution")
    ax.set_xlabel("Class")
    ax.set_ylabel("Score")
    ax.boxplot(list(BOX_DATA.values()), labels=list(BOX_DATA),
               patch_artist=True)
    plt.tight_layout()
    c = chart_of(fig)
    check("box: all keys, strict JSON", shape_ok(c), c)
    c = c or {}
    els = c.get("elements", [])
    got = {k: [e.get(k) for e in els] for k in BOX_WANT}
    check("box: type, title, labels, no units",
          c.get("type") == "box_and_whisker"
          and c.get("title") == "Exam Scores Distribution"
          and c.get("x_label") == "Class" and c.get("y_label") == "Score"
          and c.get("x_unit") is None and c.get("y_unit") is None, c)
    check("box: labels, outliers, min, quartiles, median, max as E2B's "
          "test", got == BOX_WANT and all(
              type(e[k]) is float for e in els for k in
              ("min", "first_quartile", "median", "third_quartile", "max")),
          got)

    fig, ax = plt.subplots()
    ax.boxplot(list(BOX_DATA.values()), labels=list(BOX_DATA),
               patch_artist=True, vert=False)
    ax.set_xlabel("Score (points)")
    c = chart_of(fig) or {}
    got = {k: [e.get(k) for e in c.get("elements", [])] for k in BOX_WANT}
    check("box: horizontal boxes read the same, labels/units swapped",
          got == BOX_WANT and c.get("y_label") == "Score (points)"
          and c.get("y_unit") == "points" and c.get("x_label") is None, c)


def scatter_chart():
    rng = np.random.default_rng(1)
    fig = plt.figure(figsize=(10, 6))
    plt.xlabel("A")
    plt.ylabel("B")
    plt.scatter(rng.random(5), rng.random(5), c="blue", label="Dataset 1")
    plt.scatter(rng.random(10), rng.random(10), c="red", label="Dataset 2")
    c = chart_of(fig)
    check("scatter: all keys, strict JSON", shape_ok(c), c)
    c = c or {}
    els = c.get("elements", [])
    check("scatter: no title, labels A/B, linear, float ticks, 5 and 10 "
          "points",
          c.get("type") == "scatter" and c.get("title") is None
          and c.get("x_label") == "A" and c.get("y_label") == "B"
          and c.get("x_scale") == "linear" and c.get("y_scale") == "linear"
          and is_float_list(c.get("x_ticks", [None]))
          and is_float_list(c.get("y_ticks", [None]))
          and [e["label"] for e in els] == ["Dataset 1", "Dataset 2"]
          and [len(e["points"]) for e in els] == [5, 10]
          and all(len(p) == 2 and is_float_list(p)
                  for e in els for p in e["points"]), c)


def super_chart():
    x1 = np.linspace(0, 10, 100)
    fig, axs = plt.subplots(1, 2, figsize=(10, 8))
    fig.suptitle("Multiple Graphs Example", fontsize=16)
    axs[0].plot(x1, np.sin(x1), "r")
    axs[0].set_title("Sine Wave")
    axs[0].grid(True)
    axs[1].scatter(np.random.rand(5), np.random.rand(5), c="blue",
                   label="Dataset 1")
    axs[1].set_xlabel("X")
    axs[1].set_ylabel("Y")
    axs[1].set_title("Scatter Plot")
    axs[1].grid(True)
    c = chart_of(fig)
    check("superchart: all keys (its charts' too), strict JSON",
          shape_ok(c), c)
    c = c or {}
    els = c.get("elements") or [{}, {}]
    a, b = (els + [{}, {}])[:2]
    check("superchart: suptitle, a line of 100 points, a scatter of 5",
          c.get("type") == "superchart"
          and c.get("title") == "Multiple Graphs Example" and len(els) == 2
          and a.get("type") == "line" and a.get("title") == "Sine Wave"
          and a.get("x_label") is None and a.get("y_label") is None
          and [len(e["points"]) for e in a.get("elements", [])] == [100]
          and a["elements"][0]["label"] == "Line 0"
          and b.get("type") == "scatter" and b.get("title") == "Scatter Plot"
          and b.get("x_label") == "X" and b.get("y_label") == "Y"
          and [len(e["points"]) for e in b.get("elements", [])] == [5], c)


def scales():
    dates = [datetime.date(2023, 9, 1) + datetime.timedelta(seconds=i)
             for i in range(100)]
    fig = plt.figure(figsize=(10, 6))
    plt.plot(dates, np.sin(np.linspace(0, 2 * np.pi, 100)), label="sin(x)")
    c = chart_of(fig) or {}
    check("scales: datetime x, linear y",
          c.get("type") == "line" and c.get("x_scale") == "datetime"
          and c.get("y_scale") == "linear", c)

    fig = plt.figure(figsize=(10, 6))
    plt.plot([1, 2, 3, 4, 5], ["A", "B", "C", "D", "E"])
    c = chart_of(fig) or {}
    pts = (c.get("elements") or [{}])[0].get("points")
    check("scales: categorical y, linear x; category points as strings",
          c.get("type") == "line" and c.get("x_scale") == "linear"
          and c.get("y_scale") == "categorical"
          and c.get("y_tick_labels") == ["A", "B", "C", "D", "E"]
          and pts == [[1, "A"], [2, "B"], [3, "C"], [4, "D"], [5, "E"]], c)

    x = np.linspace(0, 100, 100)
    fig = plt.figure(figsize=(10, 6))
    plt.plot(x, np.exp(x), label="y = e^x")
    plt.yscale("log")
    plt.xlabel("X-axis")
    plt.ylabel("Y-axis (log scale)")
    plt.legend()
    plt.grid(True)
    c = chart_of(fig) or {}
    check("scales: log y, unit 'log scale', x unit null",
          c.get("y_scale") == "log" and c.get("x_scale") == "linear"
          and c.get("y_unit") == "log scale" and c.get("x_unit") is None
          and [len(e["points"]) for e in c.get("elements", [])] == [100],
          c)


def unknown_and_none():
    fig, ax = plt.subplots()
    ax.add_artist(plt.Circle((0, 0), 1, color="blue", fill=False))
    ax.add_artist(plt.Circle((0, 0), 2, color="red", fill=False))
    ax.grid(True)
    plt.title("Two Concentric Circles")
    c = chart_of(fig)
    check("unknown: two Circles: type unknown, title, 0 elements",
          shape_ok(c) and c == {"type": "unknown",
                                "title": "Two Concentric Circles",
                                "elements": []}, c)

    fig = plt.figure()
    none1 = chart_of(fig)
    fig, ax = plt.subplots()
    none2 = chart_of(fig)
    check("no chart: a figure without axes, axes without data, not a "
          "figure", none1 is None and none2 is None
          and ed.figure_chart(1) is None and ed.figure_chart("x") is None
          and ed.figure_chart(pd.DataFrame({"a": [1]})) is None,
          [none1, none2])

    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    ax.get_title = None                     # reading it raises TypeError
    broken = chart_of(fig)
    check("no chart, no exception: a figure whose reading fails",
          broken is None, broken)

    fig, ax = plt.subplots()
    ax.plot(np.arange(300000), np.random.default_rng(3).random(300000))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        big = chart_of(fig)
    lines = err.getvalue().splitlines()
    check("no chart over 8 MiB, one stderr line says so",
          big is None and len(lines) == 1 and re.fullmatch(
              r"ember: the figure's chart \(\d+ MiB\) was left out: "
              r"over 8 MiB", lines[0]), lines)

    fig, ax = plt.subplots()
    ax.plot([0, 1, 2, 3], [1.0, float("nan"), float("inf"), 2.0],
            label="gaps")
    ax.axhline(1.5)                         # a grid-like line: skipped
    ax.set_xlabel("f(x)")
    c = chart_of(fig) or {}
    check("line: NaN and inf points as null, axhline skipped, "
          "'f(x)' has no unit",
          shape_ok(c) and c.get("x_unit") is None
          and [e["points"] for e in c.get("elements", [])]
          == [[[0, 1], [1, None], [2, None], [3, 2]]], c)

    fig, ax = plt.subplots()
    ax.plot(np.array(["2024-01-01T10:00", "2024-01-02T10:00"],
                     dtype="datetime64[m]"), [1, 2])
    c = chart_of(fig) or {}
    check("line: numpy datetime64 points to the second",
          [e["points"] for e in c.get("elements", [])]
          == [[["2024-01-01T10:00:00", 1], ["2024-01-02T10:00:00", 2]]]
          and c.get("x_scale") == "datetime", c)


def frames():
    df = pd.DataFrame({
        "when": pd.to_datetime(["2024-01-02 03:04:05", None]),
        1: [1.5, float("nan")],
        (2, "b"): ["x", None],
        "n": [1, 2],
        "flag": [True, False],
        "inf": [float("inf"), -float("inf")],
        "day": [datetime.date(2024, 5, 6), None],
        "nullable": pd.array([7, None], dtype="Int64"),
    })
    d = ed.dataframe_data(df)
    check("data: {column: values}, str() of non-string labels, ISO dates, "
          "NaN/NaT/inf/NA as null, Python scalars",
          d == {"when": ["2024-01-02T03:04:05", None], "1": [1.5, None],
                "(2, 'b')": ["x", None], "n": [1, 2],
                "flag": [True, False], "inf": [None, None],
                "day": ["2024-05-06", None], "nullable": [7, None]}
          and type(d["n"][0]) is int and type(d["flag"][0]) is bool, d)
    check("data: strict JSON",
          json.loads(json.dumps(d, allow_nan=False)) == d, d)
    check("data: None for a non-DataFrame (Series, int, dict, figure)",
          ed.dataframe_data(pd.Series([1])) is None
          and ed.dataframe_data(1) is None
          and ed.dataframe_data({"a": [1]}) is None, None)
    check("data: an empty DataFrame",
          ed.dataframe_data(pd.DataFrame({"a": []})) == {"a": []}, None)

    big = pd.DataFrame({"v": np.random.default_rng(2).random(600000),
                        "w": np.arange(600000)})
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        d = ed.dataframe_data(big)
    lines = err.getvalue().splitlines()
    check("data: over 8 MiB: left out, one stderr line says so",
          d is None and len(lines) == 1 and re.fullmatch(
              r"ember: the DataFrame's data \((\d+) MiB\) was left out: "
              r"over 8 MiB", lines[0])
          and int(re.search(r"\d+", lines[0]).group()) >= 9, lines)


def formatters():
    # A shell that leaves nothing behind: no history, its profile in a
    # directory removed at the end.
    with tempfile.TemporaryDirectory() as d:
        os.environ["IPYTHONDIR"] = d
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets.config import Config
        cfg = Config()
        cfg.HistoryManager.enabled = False
        shell = InteractiveShell.instance(config=cfg)
        try:
            shell_formatters(shell)
        finally:
            shell.cleanup()
            InteractiveShell.clear_instance()


def shell_formatters(shell):
    from IPython.core.pylabtools import select_figure_formats
    # What the inline backend does: figures get a PNG.
    select_figure_formats(shell, {"png"})
    ed.register(shell)
    ed.register(shell)                      # again: replaced, not doubled
    keys = list(shell.display_formatter.formatters)
    check("register: both formatters, after image/png",
          keys.count(ed.MIME_DATA) == 1 and keys.count(ed.MIME_CHART) == 1
          and keys.index("image/png") < keys.index(ed.MIME_DATA)
          and keys.index("image/png") < keys.index(ed.MIME_CHART), keys)

    fmt = shell.display_formatter.format
    df = pd.DataFrame({"a": [1, 2], "b": ["x", None]})
    bundle, _ = fmt(df)
    check("register: a DataFrame's bundle has data (and html), no chart",
          bundle.get(ed.MIME_DATA) == {"a": [1, 2], "b": ["x", None]}
          and "text/html" in bundle and ed.MIME_CHART not in bundle,
          list(bundle))

    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [1, 4, 9], label="sq")
    bundle, _ = fmt(fig)
    plt.close(fig)
    chart = bundle.get(ed.MIME_CHART) or {}
    check("register: a Figure's bundle has png then chart, no data",
          list(bundle).index("image/png") < list(bundle).index(ed.MIME_CHART)
          and chart.get("type") == "line"
          and chart["elements"][0]["points"] == [[1, 1], [2, 4], [3, 9]]
          and ed.MIME_DATA not in bundle, list(bundle))

    bundle, _ = fmt(1)
    check("register: 1 has neither",
          ed.MIME_DATA not in bundle and ed.MIME_CHART not in bundle
          and bundle.get("text/plain") == "1", bundle)


def main():
    for part in (line_chart, bar_chart, pie_chart, box_chart, scatter_chart,
                 super_chart, scales, unknown_and_none, frames, formatters):
        try:
            part()
        except Exception as e:          # a broken part fails, visibly
            check("%s ran to the end" % part.__name__, False, repr(e))
    plt.close("all")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
