# SPDX-License-Identifier: Apache-2.0
"""Structured views of displayed values, for a Python context's kernel
(guest-init/INTERP.md, result members `data` and `chart`).

Two IPython display formatters, installed by register(), add to every
display bundle of
  - a pandas DataFrame: MIME_DATA, {column: [values...]};
  - a matplotlib Figure: MIME_CHART, the chart object E2B's SDKs read
    (type line, scatter, bar, pie, box_and_whisker, superchart or
    unknown, with its elements, labels, units, ticks and scales).
The kernel bridge maps the two MIME keys to the members `data` and
`chart`.  Both run on every displayed value (`1+1` too), so each checks
the value's type against the already-imported module first and costs a
dict lookup for anything else.  Neither raises: a value they cannot
read gets no member.  Everything they return is strict JSON (no NaN or
Infinity: the host's parser rejects them).

Only the standard library is imported here; pandas, numpy and
matplotlib are used only once a value shows their module is loaded.
"""
import datetime
import decimal
import json
import math
import numbers
import re
import sys

MIME_DATA = "application/vnd.ember.data+json"
MIME_CHART = "application/vnd.ember.chart+json"

# Past this size (serialised, UTF-8) a member is left out, with one
# stderr line: below the bridge's per-result cap, so a big frame costs
# a note rather than the whole result.
MAX_BYTES = 8 << 20
_MIB = 1 << 20
# Rows converted at a time, so the size check stops a huge frame early
# instead of materialising it whole.
_CHUNK_ROWS = 65536

# "Time (s)" -> "s", "Amplitude [Hz]" -> "Hz"; "f(x)" has no unit (no
# space before the parenthesis).  The first match wins.
_UNIT = re.compile(r"\s\((.*?)\)|\[(.*?)\]")

_NO_LINE = ("None", "none", "", " ")


def _left_out(what, size):
    print("ember: the %s (%d MiB) was left out: over %d MiB"
          % (what, math.ceil(size / _MIB), MAX_BYTES // _MIB),
          file=sys.stderr)


def _json_size(value):
    return len(json.dumps(value, ensure_ascii=False, allow_nan=False)
               .encode("utf-8", "replace"))


# ---------------------------------------------------------------- data

def _cell(v):
    """One DataFrame value as a JSON value."""
    t = type(v)
    if v is None or t is str or t is bool or t is int:
        return v
    if t is float:
        return v if math.isfinite(v) else None
    if isinstance(v, (datetime.date, datetime.time)):
        # NaT is a datetime whose isoformat() is "NaT"; NaT != NaT.
        return v.isoformat() if v == v else None
    if isinstance(v, str):
        return str(v)
    if isinstance(v, numbers.Integral):     # numpy's integers too
        return int(v)
    kind = getattr(getattr(v, "dtype", None), "kind", None)
    if kind == "b":
        return bool(v)
    if kind == "f" or isinstance(v, (numbers.Real, decimal.Decimal)):
        f = float(v)
        return f if math.isfinite(f) else None
    pd = sys.modules.get("pandas")
    if pd is not None:
        na = pd.isna(v)             # pandas.NA, numpy's NaT
        if getattr(na, "ndim", 0) == 0 and na:
            return None
    return str(v)


def _frame_columns(df):
    """[(key, [values])] of @df, or the estimated serialised size when
    it is over MAX_BYTES."""
    rows = len(df.index)
    ncols = len(df.columns)
    out = []
    size = 2                        # the braces
    for i in range(ncols):
        col = df.iloc[:, i]
        label = df.columns[i]
        key = label if isinstance(label, str) else str(label)
        values = []
        size += _json_size(key) + 3     # ': ', and ', ' or '[]'
        for start in range(0, max(rows, 1), _CHUNK_ROWS):
            chunk = [_cell(v) for v in
                     col.iloc[start:start + _CHUNK_ROWS].tolist()]
            size += _json_size(chunk)
            values.extend(chunk)
            if size > MAX_BYTES:
                done = i * rows + start + len(chunk)
                return None, size * max(rows * ncols, 1) / max(done, 1)
        out.append((key, values))
    return out, size


def dataframe_data(obj):
    """The `data` member for @obj: a pandas DataFrame as {column label
    (str() of non-string labels): [values]}, values as JSON scalars
    (dates and times as ISO 8601 strings, NaN/NaT/inf as null, other
    objects as str()).  None for anything else, and for a frame whose
    serialised data would be over MAX_BYTES (then one stderr line says
    so).  Never raises."""
    pd = sys.modules.get("pandas")
    if pd is None:
        return None
    try:
        if not isinstance(obj, pd.DataFrame):
            return None
        cols, size = _frame_columns(obj)
        if cols is None:
            _left_out("DataFrame's data", size)
            return None
        return dict(cols)
    except Exception:
        return None


# --------------------------------------------------------------- chart

def _round(x, digits=8):
    """@x rounded to @digits significant digits (floating-point noise
    off the values a chart was drawn from), None if not finite."""
    f = float(x)
    if not math.isfinite(f):
        return None
    return float("%.*g" % (digits, f))


def _unit(label):
    if not label:
        return None
    m = _UNIT.search(label)
    if m is None:
        return None
    u = m.group(1) if m.group(1) is not None else m.group(2)
    return u or None


def _is_date_axis(axis):
    import matplotlib.dates as mdates
    get = getattr(axis, "get_converter", None)
    conv = get() if get is not None else getattr(axis, "converter", None)
    kinds = (mdates.DateConverter,
             getattr(mdates, "_SwitchableDateConverter", ()))
    return isinstance(conv, kinds)


def _coords(values):
    """A line's or an offset column's values as JSON values: numbers,
    ISO strings for dates, strings for categories, null for NaN/NaT/
    masked."""
    import numpy as np
    mask = np.ma.getmaskarray(values)
    data = np.ma.getdata(values)
    if data.ndim != 1:
        data = data.ravel()
        mask = mask.ravel()
    kind = data.dtype.kind
    if kind in "fiub":
        nums = data.astype(float)
        ok = np.isfinite(nums) & ~mask
        out = nums.tolist()
        if not ok.all():
            out = [v if g else None for v, g in zip(out, ok.tolist())]
        return out
    if kind == "M":
        secs = data.astype("datetime64[s]").astype(str).tolist()
        return [None if m or s == "NaT" else s
                for s, m in zip(secs, mask.tolist())]
    return [None if m else _coord(v)
            for v, m in zip(data.tolist(), mask.tolist())]


def _coord(v):
    if v is None:
        return None
    if isinstance(v, str):
        return str(v)
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat() if v == v else None
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, np.datetime64):
        if np.isnat(v):
            return None
        return str(v.astype("datetime64[s]"))
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return str(v)
    return f if math.isfinite(f) else None


def _ticks(axis, is_date):
    import matplotlib.dates as mdates
    locs = axis.get_majorticklocs()
    if is_date:
        return [mdates.num2date(t).isoformat() for t in locs]
    return [_coord(t) for t in locs]


def _scale(scale, is_date, ticks, labels):
    if is_date:
        return "datetime"
    if scale != "linear":
        return scale
    # Category axes put tick i at i and label it with the category.
    pairs = list(zip(ticks, labels))
    if pairs and all(isinstance(t, float) and t == i and lab != str(i)
                     for i, (t, lab) in enumerate(pairs)):
        return "categorical"
    return "linear"


def _label_at(axis, lo, hi):
    """The text of @axis's tick inside [@lo, @hi] nearest its middle
    (the label under a bar or box), else the middle as a number."""
    mid = (lo + hi) / 2
    best = None
    for loc, text in zip(axis.get_majorticklocs(), axis.get_ticklabels()):
        if lo - 1e-9 <= loc <= hi + 1e-9:
            if best is None or abs(loc - mid) < abs(best[0] - mid):
                best = (loc, text.get_text())
    return best[1] if best is not None else "%g" % mid


def _base(kind, ax):
    title = ax.get_title() or ax.get_title("left") or ax.get_title("right")
    return {"type": kind, "title": title or None, "elements": []}


def _base2d(kind, ax, swap=False):
    chart = _base(kind, ax)
    x, y = ax.get_xlabel() or None, ax.get_ylabel() or None
    if swap:
        x, y = y, x
    chart.update(x_label=x, y_label=y, x_unit=_unit(x), y_unit=_unit(y))
    return chart


def _is_grid_line(line):
    # axhline/axvline-like: two points on one horizontal or vertical.
    x, y = line.get_xdata(), line.get_ydata()
    return len(x) == 2 and len(y) == 2 and (x[0] == x[1] or y[0] == y[1])


def _point_chart(kind, ax):
    chart = _base2d(kind, ax)
    for name, axis, scale in (("x", ax.xaxis, ax.get_xscale()),
                              ("y", ax.yaxis, ax.get_yscale())):
        is_date = _is_date_axis(axis)
        ticks = _ticks(axis, is_date)
        labels = [t.get_text() for t in axis.get_ticklabels()]
        chart[name + "_ticks"] = ticks
        chart[name + "_tick_labels"] = labels
        chart[name + "_scale"] = _scale(scale, is_date, ticks, labels)
    if kind == "line":
        for line in ax.lines:
            if _is_grid_line(line):
                continue
            label = line.get_label()
            if label.startswith("_child") and label[6:].isdigit():
                label = "Line %d" % int(label[6:])
            xs = _coords(line.get_xdata())
            ys = _coords(line.get_ydata())
            chart["elements"].append(
                {"label": label, "points": [list(p) for p in zip(xs, ys)]})
    else:
        for coll in ax.collections:
            offsets = coll.get_offsets()
            xs, ys = _coords(offsets[:, 0]), _coords(offsets[:, 1])
            chart["elements"].append(
                {"label": coll.get_label(),
                 "points": [list(p) for p in zip(xs, ys)]})
    return chart


def _bar_chart(ax):
    from matplotlib.container import BarContainer
    containers = [c for c in ax.containers if isinstance(c, BarContainer)]
    horizontal = False
    if containers:
        first = containers[0]
        orientation = getattr(first, "orientation", None)
        if orientation is None:
            # Old matplotlib: E2B's rule (equal heights: barh).
            heights = [r.get_height() for r in first]
            horizontal = all(h == heights[0] for h in heights)
        else:
            horizontal = orientation == "horizontal"
    chart = _base2d("bar", ax, swap=horizontal)
    axis = ax.yaxis if horizontal else ax.xaxis
    for n, cont in enumerate(containers):
        group = cont.get_label()
        if group.startswith("_container") and group[10:].isdigit():
            group = "Group %d" % int(group[10:])
        for rect in cont:
            if horizontal:
                lo, size, value = rect.get_y(), rect.get_height(), \
                    rect.get_width()
            else:
                lo, size, value = rect.get_x(), rect.get_width(), \
                    rect.get_height()
            chart["elements"].append(
                {"label": _label_at(axis, lo, lo + size), "group": group,
                 "value": _coord(value)})
    return chart


def _pie_chart(ax):
    chart = _base("pie", ax)
    for wedge in ax.patches:
        chart["elements"].append(
            {"label": wedge.get_label(),
             # pie() works out the fractions in float32: 90 % is
             # 323.9999914 degrees, 324 at 6 digits.
             "angle": _round(abs(wedge.theta2 - wedge.theta1), 6),
             "radius": _coord(wedge.r)})
    return chart


def _box_horizontal(ax, boxes):
    """True when @boxes (x0, x1, y0, y1) lie along the y axis: all the
    same height but not all the same width; when both or neither hold,
    the axis whose ticks boxplot() fixed at the positions."""
    import matplotlib.ticker as mticker
    heights = {b[3] - b[2] for b in boxes}
    widths = {b[1] - b[0] for b in boxes}
    if (len(heights) == 1) != (len(widths) == 1):
        return len(heights) == 1
    fixed = (isinstance(a.get_major_locator(), mticker.FixedLocator)
             for a in (ax.xaxis, ax.yaxis))
    x_fixed, y_fixed = fixed
    return y_fixed and not x_fixed


def _box_of(boxes, x):
    for b in boxes:
        if b[0] <= x <= b[1]:
            return b
    return None


def _box_chart(ax):
    extents = []
    for patch in ax.patches:
        v = patch.get_path().vertices
        xs = [_round(x) for x in v[:, 0]]
        ys = [_round(y) for y in v[:, 1]]
        extents.append((min(xs), max(xs), min(ys), max(ys)))
    horizontal = _box_horizontal(ax, extents)
    if horizontal:
        extents = [(b[2], b[3], b[0], b[1]) for b in extents]
    chart = _base2d("box_and_whisker", ax, swap=horizontal)
    axis = ax.yaxis if horizontal else ax.xaxis
    # Per box (keyed by extent): whisker ends, the median's width and
    # value, the outliers.
    found = {b: {"min": None, "max": None, "median": None, "width": -1.0,
                 "outliers": []} for b in extents}
    for line in ax.lines:
        xs = [_round(x) for x in line.get_xdata()]
        ys = [_round(y) for y in line.get_ydata()]
        if horizontal:
            xs, ys = ys, xs
        pts = [(x, y) for x, y in zip(xs, ys) if x is not None
               and y is not None]
        if line.get_linestyle() in _NO_LINE or len(pts) == 1:
            for x, y in pts:                # fliers: markers only
                b = _box_of(extents, x)
                if b is not None:
                    found[b]["outliers"].append(y)
            continue
        if len(pts) != 2:
            continue
        (xa, ya), (xb, yb) = pts
        if xa == xb:                        # a whisker
            b = _box_of(extents, xa)
            if b is None:
                continue
            lo, hi = min(ya, yb), max(ya, yb)
            if hi <= b[2]:
                f = found[b]
                f["min"] = lo if f["min"] is None else min(f["min"], lo)
            elif lo >= b[3]:
                f = found[b]
                f["max"] = hi if f["max"] is None else max(f["max"], hi)
        elif ya == yb:                      # a median (or a cap)
            lo, hi = min(xa, xb), max(xa, xb)
            b = _box_of(extents, lo)
            if b is None or hi > b[1] or not b[2] <= ya <= b[3]:
                continue
            f = found[b]
            if hi - lo > f["width"]:        # the median spans the box
                f["width"], f["median"] = hi - lo, ya
    for b in extents:
        f = found[b]
        chart["elements"].append({
            "label": _label_at(axis, b[0], b[1]),
            "min": f["min"] if f["min"] is not None else b[2],
            "first_quartile": b[2], "median": f["median"],
            "third_quartile": b[3],
            "max": f["max"] if f["max"] is not None else b[3],
            "outliers": f["outliers"]})
    return chart


def _kind(ax):
    """The chart type of @ax, from the kinds of its artists (texts
    aside)."""
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import PathPatch, Rectangle, Wedge
    objs = [*ax.lines, *ax.patches, *ax.collections, *ax.images,
            *ax.tables, *ax.artists]

    def every(kinds):
        return all(isinstance(o, kinds) for o in objs)

    if every(Line2D):
        return "line"
    if every((PathPatch, Line2D)):
        return "box_and_whisker"
    objs = [o for o in objs if not (isinstance(o, Line2D)
                                    and _is_grid_line(o))]
    for kind, cls in (("scatter", PathCollection), ("pie", Wedge),
                      ("bar", Rectangle)):
        if every(cls):
            return kind
    return "unknown"


def _axes_chart(ax):
    kind = _kind(ax)
    if kind in ("line", "scatter"):
        return _point_chart(kind, ax)
    if kind == "bar":
        return _bar_chart(ax)
    if kind == "pie":
        return _pie_chart(ax)
    if kind == "box_and_whisker":
        return _box_chart(ax)
    return _base("unknown", ax)


def _suptitle(fig):
    get = getattr(fig, "get_suptitle", None)     # matplotlib >= 3.8
    if get is not None:
        return get() or None
    sup = getattr(fig, "_suptitle", None)
    return (sup.get_text() or None) if sup is not None else None


def _figure_chart(fig):
    axes = fig.get_axes()
    if not axes or not any(ax.has_data() for ax in axes):
        return None
    if fig.stale:
        # Never drawn (no PNG made before us), or changed since: tick
        # positions and labels are settled by a draw.
        draw = getattr(fig, "draw_without_rendering", None)
        if draw is not None:
            draw()
        else:
            fig.canvas.draw()
    if len(axes) == 1:
        return _axes_chart(axes[0])
    return {"type": "superchart", "title": _suptitle(fig),
            "elements": [_axes_chart(ax) for ax in axes]}


def figure_chart(fig):
    """The `chart` member for @fig: a matplotlib Figure as E2B's chart
    object (one axes: its chart; several: a superchart of one chart per
    axes).  None for anything else, for a figure without axes or data,
    when reading it fails, and when the chart would be over MAX_BYTES
    (then one stderr line says so).  Never raises."""
    mod = sys.modules.get("matplotlib.figure")
    if mod is None:
        return None
    try:
        if not isinstance(fig, mod.Figure):
            return None
        chart = _figure_chart(fig)
        if chart is None:
            return None
        size = _json_size(chart)    # also proves it strict JSON
        if size > MAX_BYTES:
            _left_out("figure's chart", size)
            return None
        return chart
    except Exception:
        return None


# ---------------------------------------------------------- formatters

def _formatter(mime, name, extract):
    from IPython.core.formatters import BaseFormatter
    from traitlets import ObjectName, Unicode

    class EmberFormatter(BaseFormatter):
        format_type = Unicode(mime)
        _return_type = dict
        print_method = ObjectName("_repr_ember_%s_" % name)

        def __call__(self, obj):
            # Straight to the extractor: no print-method lookup on
            # every displayed value, and it never raises.
            return extract(obj) if self.enabled else None

    EmberFormatter.__name__ = "Ember%sFormatter" % name.capitalize()
    return EmberFormatter


def register(shell):
    """Install the data and chart formatters on @shell (an IPython
    InteractiveShell), after the PNG formatter (formatters run in dict
    order: a figure's PNG render also settles the ticks the chart
    reads).  Calling it again replaces them."""
    df = shell.display_formatter
    for mime, name, extract in ((MIME_DATA, "data", dataframe_data),
                                (MIME_CHART, "chart", figure_chart)):
        df.formatters.pop(mime, None)
        df.formatters[mime] = _formatter(mime, name, extract)(parent=df)
