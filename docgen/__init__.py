"""The documentation generator: keeps the marked blocks of README.md and docs/*.md equal to what the
code and the project's commands print, and checks every command and link the pages show.

    make docs            # regenerate what is derived from code, and the drill blocks from the last report
    make docs BENCH=1    # also run the benchmarks again and rewrite their figures
    python -m docgen check
"""
