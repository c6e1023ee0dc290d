#!/usr/bin/env bash
# Regenerates the docs' screenshots, docs/images/<name>.png, from the browser tests that take them
# (`screenshot(page, "<name>")` in tests/browser/): the app served with the suite's tiny model and fixture data,
# in headless Chromium (/usr/bin/chromium), each image the browser window at 1500 x 1300 pixels.
# Only the images the docs show are copied into docs/images (tests/docs/test_images.py checks that every one
# of them comes from a test listed here). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
TESTS=(
    "tests/browser/test_pages.py::test_picking_a_crows_pairs_pair_shows_its_tokens"
    "tests/browser/test_pages.py::test_a_dataset_run_shows_progress_then_the_breakdown"
    "tests/browser/test_pages.py::test_model_comparison_page"
    "tests/browser/test_kurita_page.py::test_in_a_browser_uploaded_lists_and_the_weat_table"
    "tests/browser/test_leaderboard.py::test_five_hundred_models"
)
bash scripts/setup.sh --dev
shots=$(mktemp -d)
trap 'rm -rf "$shots"' EXIT
for test in "${TESTS[@]}"; do  # one pytest each: each test gets an app server of its own, as when it runs alone
    BIASLENS_DOCS_IMAGES="$shots" BIASLENS_REQUIRE_BROWSER=1 .venv/bin/python -m pytest -p no:cacheprovider -q "$test" "$@"
done
mkdir -p docs/images
for name in $(grep -ohE 'images/[A-Za-z0-9_.-]+\.png' README.md docs/*.md | sed 's|images/||; s|\.png$||' | sort -u); do
    if [ ! -f "$shots/$name.png" ]; then
        echo "docs_screenshots: no test listed here took '$name' (screenshot(page, \"$name\"))" >&2
        exit 1
    fi
    cp "$shots/$name.png" "docs/images/$name.png"
    echo "docs/images/$name.png"
done
