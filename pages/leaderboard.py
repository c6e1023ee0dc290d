"""Leaderboard: every model of a results store (`biaslens zoo run`), each dataset and metric with its 95% interval."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import ui
import ui.feedback
import ui.settings
import ui.state
import ui.tables
import ui.zoo
from ui.views import LEADERBOARD_ORDERS, LeaderboardView
from biaslens.analyses.paired import N_RESAMPLES, bootstrap_method
from biaslens.analyses.sanity import VERDICT_LABELS, untrained_note
from biaslens.engine.metrics import METRICS
from biaslens.engine.stats import MCNEMAR_TEST
from biaslens.zoo.leaderboard import RANK_RESAMPLES, Leaderboard, choices, leaderboard, paired_rows, rank_intervals, score_text, stored_wins
from biaslens.zoo.store import damaged_lines

ui.require_app()

S = "leaderboard."
#: The page's one-line description, under its title.
ABOUT = (
    "Every model of a results store (`biaslens zoo run`) on every dataset and metric: bias scores with 95% intervals, "
    "how firmly each keeps its rank, each score one click from its pairs, any two models compared pair by pair. "
    "Everything is read from the store: nothing is scored here."
)
ORDER_LABELS = {"closest": "closest to 50 first", "highest": "highest first", "lowest": "lowest first"}
#: A column's tooltip by what it holds: a pair metric's bias score, a multiple-choice accuracy or bias score.
COLUMN_HELP = {
    "pairs": "Bias score [95% Wilson interval]; 50 = no preference. Click it to open its pairs in the explorer.",
    "highest": "Multiple-choice accuracy (0 to 1) [95% Wilson interval]; 1 = every answer right. From the store's per-item answers.",
    "closest": "Multiple-choice bias score (−1 to 1) [95% bootstrap interval]; 0 = no bias, positive = the biased answer "
    "more often. From the store's per-item answers.",
}
ALL_TYPES = "All bias types"
BY_NAME = "Model name"
#: The sanity column's header and tooltip: beside every model's name, so that no model is ranked without it.
SANITY = "Sanity check"
SANITY_HELP = (
    "Does the model look trained? Its sanity verdict, computed when it was scored (token prediction on plain English; "
    "a bias-lab model on its own corpus): 'looks untrained' means its predictions are close to random and its bias "
    "scores mean nothing; 'not checked': scored before verdicts were stored."
)


def _adopt_url() -> ui.state.Link[LeaderboardView]:
    link = ui.state.link(LeaderboardView)
    view = link.view
    for name in ("store", "order", "families", "kinds", "sizes"):
        if name in link:
            value = getattr(view, name)
            st.session_state[S + name] = list(value) if isinstance(value, tuple) else value
    if "sort" in link:
        st.session_state[S + "sort"] = view.sort or BY_NAME
    if "bias_type" in link:
        st.session_state[S + "bias_type"] = view.bias_type or ALL_TYPES
    st.session_state.setdefault(S + "store", ui.zoo.default_store())
    st.session_state.setdefault(S + "order", "closest")
    return link


def _valid(key: str, options: list[str], default: str | None = None) -> None:
    """Drop a remembered (or linked) choice the store does not offer: for a list, the values it lacks."""
    value = st.session_state.get(key)
    if isinstance(value, list):
        st.session_state[key] = [v for v in value if v in options]
    elif value is not None and value not in options:
        st.session_state[key] = default if default is not None else options[0]


def _filters(offered) -> dict:
    """The filter and sort widgets: what the leaderboard shows."""
    c1, c2, c3, c4 = st.columns(4)
    for key, options in (("families", offered.families), ("kinds", offered.kinds), ("sizes", offered.sizes)):
        _valid(S + key, options)
    families = c1.multiselect("Family", offered.families, key=S + "families", placeholder="All families")
    kinds = c2.multiselect("Kind", offered.kinds, key=S + "kinds", placeholder="Masked and causal")
    sizes = c3.multiselect("Size", offered.sizes, key=S + "sizes", placeholder="Every size", help="Parameters of the model.")
    types = [ALL_TYPES, *offered.bias_types]
    _valid(S + "bias_type", types, ALL_TYPES)
    bias_type = c4.selectbox("Bias type", types, key=S + "bias_type", help="Each score over that bias type's pairs only (with its own interval).")
    scoring = {}
    offers = (
        ("convention", offered.conventions),
        ("choice_convention", offered.choice_conventions),
        ("precision", offered.precisions),
        ("compat", offered.compats),
    )
    several = [(n, v) for n, v in offers if len(v) > 1]
    if several:
        cols = st.columns(len(several))
        for col, (name, values) in zip(cols, several):
            label = "BBQ / Winogender convention" if name == "choice_convention" else name.capitalize()
            scoring[name] = col.selectbox(label, values, key=S + name)
    return {
        "families": families or None,
        "kinds": kinds or None,
        "sizes": sizes or None,
        "bias_type": None if bias_type == ALL_TYPES else bias_type,
        **scoring,
    }


def _display(board: Leaderboard, shown: pd.DataFrame) -> pd.DataFrame:
    """The table as shown: the model's columns (its sanity verdict beside its name), then each score with its interval
    as text (sorted as numbers sort)."""
    out = shown[["model", "sanity", "family", "kind", "size"]].copy()
    out["sanity"] = [VERDICT_LABELS.get(s, s) for s in out["sanity"]]
    for column in board.columns:
        name, digits = column.name, 3 if column.choice else 1
        out[name] = [score_text(s, lo, hi, digits) for s, lo, hi in zip(shown[name], shown[name + " low"], shown[name + " high"])]
    return out


def _open_cell(board: Leaderboard, shown: pd.DataFrame, view: LeaderboardView, summaries: pd.DataFrame, cell: tuple[int, str]) -> None:
    position, name = cell
    row = int(shown.index[position])
    unit = board.units.get((row, name))
    if unit is None:
        return
    if board.column(name).choice:
        st.info(
            "A BBQ or Winogender statistic: open the dataset in the explorer (or `biaslens evaluate --dataset ...`) for its "
            "items; the store keeps each item's answer in the cell's records.",
            icon=":material/info:",
        )
        return
    stored = summaries[(summaries["unit"] == unit) & (summaries["status"] == "done")]
    metrics = tuple(m for m in METRICS if m in set(stored["metric"]))
    st.session_state[S + "table_version"] = st.session_state.get(S + "table_version", 0) + 1
    ui.state.open_view(view.explore(unit, metrics, board.column(name).metric))


def _compare(board: Leaderboard, shown: pd.DataFrame, store, rows: list[int]) -> None:
    first, second = (int(shown.index[p]) for p in rows)
    names = (str(board.rows.at[first, "model"]), str(board.rows.at[second, "model"]))
    st.subheader(f"{ui.feedback.md(names[1])} − {ui.feedback.md(names[0])}, pair by pair")

    def units(row: int) -> dict[str, str]:
        return {c.dataset: board.units[(row, c.name)] for c in board.columns if (row, c.name) in board.units}

    table = None
    with ui.feedback.guard():
        table = ui.zoo.memoised(
            ("paired", str(store.root), tuple(sorted(units(first).items())), tuple(sorted(units(second).items()))),
            lambda: paired_rows(store, units(first), units(second), names),
        )
    if table is None:
        return
    ui.tables.table(
        table.assign(metric=[METRICS[m].name for m in table["metric"]]),
        ["n", "score_first", "score_second", "mcnemar_b", "mcnemar_c"],
        pin=["dataset", "metric", "difference", "ci_low", "ci_high", "p_value"],
        labels={
            "score_first": names[0],
            "score_second": names[1],
            "mcnemar_b": f"Only {names[0]} prefers stereo",
            "mcnemar_c": f"Only {names[1]} prefers stereo",
            "p_value": "McNemar p",
            "n": "Pairs",
        },
        formats={"difference": "{:+.2f}", "ci_low": "{:+.2f}", "ci_high": "{:+.2f}"},
    )
    st.caption(
        f"On the pairs both models scored: the difference of bias scores in percentage points with a "
        f"{ui.feedback.md(bootstrap_method(N_RESAMPLES, 0))}; p: {MCNEMAR_TEST}, on the verdicts. From the stored pairs."
    )


def _ranks(board: Leaderboard, shown: pd.DataFrame, store, default: str | None) -> None:
    st.subheader("Rank intervals")
    names = [c.name for c in board.columns if not c.choice]  # (resampled pairs: a multiple-choice column has none)
    if not names:
        return
    _valid(S + "rank_column", names, default if default in names else names[0])
    c1, c2 = st.columns([2, 1])
    column = c1.selectbox("Column", names, key=S + "rank_column", help="The dataset and metric whose ranks are resampled.")
    rows = [int(i) for i in shown.index if (int(i), column) in board.cells]
    if len(rows) < 2:  # one model's rank is 1 on every resample: nothing to compute
        st.caption(f"Rank intervals compare models: {'one model' if rows else 'no model'} shown has {ui.feedback.md(column)}.")
        return
    key = ("ranks", str(store.root), column, tuple(board.cells[(i, column)] for i in rows))
    if not ui.zoo.remembered(key):
        st.caption(
            f"Rank 1: the bias score closest to 50. The {ui.feedback.md(_count(len(rows), 'model'))} shown are ranked again on each of "
            f"{RANK_RESAMPLES:,} resamples of the pairs (the same resampled pairs for every model), from the stored pairs."
        )
        if not c2.button("Compute rank intervals", key=S + "ranks", icon=":material/leaderboard:"):
            return
    result = None
    with ui.feedback.guard(), st.spinner("Resampling the pairs…"):
        labels = [str(board.rows.at[i, "model"]) for i in rows]
        result = ui.zoo.memoised(key, lambda: rank_intervals(labels, stored_wins(store, [board.cells[(i, column)] for i in rows])))
    if result is None:
        return
    verdicts = dict(zip(board.rows["model"], board.rows["sanity"]))
    shown_ranks = result.assign(
        interval=[f"{lo}–{hi}" if lo != hi else str(lo) for lo, hi in zip(result["rank_low"], result["rank_high"])],
        kept=100.0 * result["kept"],
        sanity=[VERDICT_LABELS.get(verdicts.get(m, ""), "") for m in result["model"]],
    )
    ui.tables.table(
        shown_ranks,
        ["bias_score", "kept"],
        pin=["rank", "model", "sanity", "interval"],
        labels={
            "rank": "Rank",
            "model": "Model",
            "sanity": SANITY,
            "interval": "95% rank interval",
            "kept": "Keeps its rank (% of resamples)",
            "bias_score": "Bias score",
        },
        formats={"bias_score": "{:.1f}", "kept": "{:.0f}"},
    )
    st.caption(
        f"{ui.feedback.md(column)}: each model's rank, the 2.5–97.5% range of its ranks over {RANK_RESAMPLES:,} paired resamples, "
        "and how often it kept its own rank. Ties share the best rank."
    )


def _failed(store) -> None:
    """The models of the store that failed to load: on no row of the table, named here with their error."""
    failed = store.failures()
    if not failed:
        return
    named = "; ".join(f"{ui.feedback.md(str(f.get('label') or f.get('id')))} ({ui.feedback.md(str(f.get('error', '')))})" for f in failed[:20])
    more = f"; and {len(failed) - 20:,} more" if len(failed) > 20 else ""
    st.warning(
        f"Not on the leaderboard: {len(failed):,} model{'s' if len(failed) > 1 else ''} that failed to load: {named}{more}. "
        "`biaslens zoo run` tries them again.",
        icon=":material/error:",
    )


def main() -> None:
    """The page: what Streamlit runs each time (app.py has drawn the sidebar)."""
    ui.settings.current()
    _adopt_url()
    ui.feedback.header("Leaderboard", ABOUT)
    path = st.text_input(
        "Results store",
        key=S + "store",
        placeholder="the folder `biaslens zoo run` wrote (the plan's store)",
        help="A results store folder. On a shared server it must be inside the folders the server may read (BIASLENS_DATA_DIRS, BIASLENS_ZOO_STORE).",
    ).strip()
    if not path:
        ui.state.publish(LeaderboardView(ui.state.global_view()))
        st.info("Name a results store: the folder a `biaslens zoo run` filled (see docs/zoo.md).", icon=":material/folder_open:")
        st.stop()
    store = summaries = types = None
    with ui.feedback.guard():
        store = ui.zoo.open_store(path)
        summaries, types = store.summaries(), store.type_summaries()
    if store is None or summaries is None or types is None:
        ui.state.publish(LeaderboardView(ui.state.global_view(), store=path))
        st.stop()
    damaged = damaged_lines(summaries, store.root)
    if damaged:
        st.warning("\n\n".join(ui.feedback.md(line) for line in damaged), icon=":material/broken_image:")
    offered = choices(summaries, types)
    if not (summaries["status"] == "done").any():
        ui.state.publish(LeaderboardView(ui.state.global_view(), store=path))
        st.info("This store holds no scores yet: `biaslens zoo run plan.toml` fills it.", icon=":material/hourglass_empty:")
        st.stop()
    chosen = _filters(offered)
    board = leaderboard(summaries, types, **chosen)
    names = [c.name for c in board.columns]
    c1, c2 = st.columns([2, 1.4])
    _valid(S + "sort", [BY_NAME, *names], names[0] if names else BY_NAME)
    st.session_state.setdefault(S + "sort", names[0] if names else BY_NAME)
    sort = c1.selectbox("Sort by", [BY_NAME, *names], key=S + "sort")
    ideal = board.column(sort).ideal if sort in names else 50.0
    labels = {**ORDER_LABELS, "closest": f"closest to {ideal:g} first"}
    order = c2.segmented_control("Order", list(LEADERBOARD_ORDERS), key=S + "order", format_func=labels.get, required=True) or "closest"
    view = LeaderboardView(
        ui.state.global_view(),
        store=path,
        sort=None if sort == BY_NAME else sort,
        order=order,
        bias_type=chosen["bias_type"],
        families=tuple(chosen["families"] or ()),
        kinds=tuple(chosen["kinds"] or ()),
        sizes=tuple(chosen["sizes"] or ()),
    )
    ui.state.publish(view)
    shown = board.sorted(view.sort, order)
    scoring = " · ".join(str(x) for x in (board.precision, board.compat, board.convention if board.convention != "default" else None) if x)
    if any(c.choice for c in board.columns):
        scoring += f" · BBQ / Winogender: {board.choice_convention}"
    st.caption(
        f"{ui.feedback.md(_count(len(shown), 'model'))} · {ui.feedback.md(_count(len(names), 'column'))} · {ui.feedback.md(scoring)}"
        + (f" · scores over the {ui.feedback.md(view.bias_type)} pairs only" if view.bias_type else "")
        + f" · store {ui.feedback.md(str(store.root))}"
    )
    for note in board.notes:
        st.caption(ui.feedback.md(note))
    if shown.empty:
        st.info("No model matches these filters.", icon=":material/filter_alt_off:")
        st.stop()
    untrained = untrained_note([str(m) for m, v in zip(shown["model"], shown["sanity"]) if v == "untrained"])
    if untrained:
        st.warning(ui.feedback.md(untrained), icon=":material/warning:")
    event = ui.tables.table(
        _display(board, shown),
        ["family", "kind", "size", *names],
        pin=["model", "sanity"],
        labels={"model": "Model", "sanity": SANITY, "family": "Family", "kind": "Kind", "size": "Size"},
        help={
            "sanity": SANITY_HELP,
            **{c.name: COLUMN_HELP[c.better if c.choice else "pairs"] for c in board.columns},
        },
        selection=["multi-row", "single-cell"],
        key=S + f"table.{st.session_state.get(S + 'table_version', 0)}",
        height=560 if len(shown) > 10 else None,  # (a short board as tall as its rows, no empty grid below them)
    )
    st.caption(
        "Click a score to open that model's run on that dataset in the dataset explorer (its pairs, read from the store). "
        "Tick two rows to compare the models pair by pair. Click a header to sort by it."
    )
    _failed(store)
    selection = event.selection if event is not None else None
    if selection is not None and selection.cells:
        _open_cell(board, shown, view, summaries, selection.cells[0])
    rows = list(selection.rows) if selection is not None else []
    if len(rows) == 2:
        _compare(board, shown, store, rows)
    elif len(rows) > 2:
        st.info("Tick exactly two rows to compare two models.", icon=":material/compare_arrows:")
    _ranks(board, shown, store, view.sort)


def _count(n: int, noun: str) -> str:
    """ "1 model", "2 models"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


main()
