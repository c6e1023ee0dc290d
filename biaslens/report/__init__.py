"""Reports written as files: the reproduction report of the papers' tables (`reproduction`: Markdown, HTML, a zip)
and the bias-lab sweep's output folder (`sweep`). It may import every layer below (`figures`, `serving`, `lab`,
`kurita`, `analyses`, `engine`, `data`), never `cli`.
"""
