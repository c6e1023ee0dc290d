"""Figures built from DataFrames: Altair charts (`charts`: slides, exports, notebooks, SVG/PNG offline), the pair
inspector's charts and the app's small tables as plain HTML (`html`), and how values and headers are written for
people (`formatting`). Figure builders take frames and return figures; they compute nothing of their own. This layer
may import everything below it (`lab`, `kurita`, `analyses`, `engine`, `data`), never `serving`, `report` or `cli`.
"""
