"""The bias-lab sweep's output folder: cells.csv, metrics.csv (the ranking), sweep.json (with its manifest),
dose_response.svg and summary.md. The sweep (`biaslens.lab.sweep`) computes the frames and the summary; the figure
comes from `biaslens.figures.charts`."""

from __future__ import annotations

from pathlib import Path

from biaslens.data.export import atomic_write, safe_csv, to_json
from biaslens.figures.charts import dose_response_svg
from biaslens.lab import sweep


#: The files `write_outputs` writes (dose_response.svg when a cell has scores).
OUTPUT_FILES = ("cells.csv", "metrics.csv", "sweep.json", "dose_response.svg", "summary.md")


def write_outputs(result: sweep.SweepResult, out_dir: str | Path, analysis: sweep.SweepAnalysis | None = None) -> dict[str, Path]:
    """Write cells.csv, metrics.csv (the ranking), sweep.json (with its manifest), dose_response.svg and summary.md."""
    out = Path(out_dir)
    analysis = analysis or result.analysis()
    cells = result.frame()
    ranking_frame = analysis.ranking
    if not ranking_frame.empty:
        ranking_frame = ranking_frame[[c for c in sweep.RANKING_COLUMNS if c in ranking_frame.columns]]
    paths = {
        "cells": atomic_write(out / "cells.csv", safe_csv(cells)),
        "metrics": atomic_write(out / "metrics.csv", safe_csv(ranking_frame)),
        "sweep": atomic_write(out / "sweep.json", to_json({"manifest": result.manifest(), **analysis.to_dict()})),
    }
    if not analysis.cells.empty:
        paths["figure"] = atomic_write(out / "dose_response.svg", dose_response_svg(analysis.cells))
    paths["summary"] = atomic_write(out / "summary.md", sweep.summary_markdown(result, analysis))
    return paths


__all__ = ["OUTPUT_FILES", "write_outputs"]
