"""`make package`: the Lambda deployment zips of the supervisor and the watchdog, built for the Lambda
runtime (python3.12 on x86_64: manylinux wheels only, nothing compiled here), and their sizes against
Lambda's 250 MB unzipped limit."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from deploy.bundles import LAMBDA_BUNDLES, Bundle

ROOT = Path(__file__).resolve().parents[1]
LAMBDA_PYTHON = "3.12"
# Lambda's python3.12 runs on Amazon Linux 2023 (glibc 2.34): any manylinux wheel up to glibc 2.34 loads.
# pip does not widen an explicit --platform, so each compatible tag is named.
PLATFORMS = tuple(f"manylinux_2_{minor}_x86_64" for minor in range(34, 16, -1))
UNZIPPED_LIMIT_BYTES = 250 * 1024 * 1024
_MB = 1024 * 1024


@dataclass(frozen=True)
class Built:
    bundle: Bundle
    directory: Path
    zip_path: Path | None
    files: int
    unzipped_bytes: int

    @property
    def zipped_bytes(self) -> int:
        return self.zip_path.stat().st_size if self.zip_path else 0

    @property
    def headroom_bytes(self) -> int:
        return UNZIPPED_LIMIT_BYTES - self.unzipped_bytes


def install(bundle: Bundle, target: Path, python_version: str) -> None:
    """The bundle's distributions and their dependencies, as wheels for ``python_version`` on Linux x86_64,
    at the versions constraints.txt pins."""
    subprocess.run(  # noqa: S603 - pip with fixed arguments
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",
            "--target",
            str(target),
            *(arg for platform in PLATFORMS for arg in ("--platform", platform)),
            "--implementation",
            "cp",
            "--python-version",
            python_version,
            "--only-binary=:all:",
            "-c",
            str(ROOT / "constraints.txt"),
            *bundle.requirements,
        ],
        check=True,
    )


def _zip(directory: Path, destination: Path) -> None:
    """A reproducible zip: sorted entries, fixed timestamps and modes."""
    with zipfile.ZipFile(destination, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            info = zipfile.ZipInfo(str(path.relative_to(directory)), date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if path.stat().st_mode & 0o111 else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())


def build(
    bundle: Bundle, out_dir: Path, *, python_version: str = LAMBDA_PYTHON, zip_it: bool = True
) -> Built:
    """Install, copy our packages, and zip ``out_dir/<name>/`` into ``out_dir/<name>.zip``."""
    directory = out_dir / bundle.name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    install(bundle, directory, python_version)
    for package in bundle.packages:
        shutil.copytree(ROOT / package, directory / package, ignore=shutil.ignore_patterns("__pycache__"))
    files = [p for p in directory.rglob("*") if p.is_file()]
    zip_path = out_dir / f"{bundle.name}.zip" if zip_it else None
    if zip_path:
        _zip(directory, zip_path)
    return Built(bundle, directory, zip_path, len(files), sum(p.stat().st_size for p in files))


def render(built: list[Built]) -> str:
    lines = [
        f"{'bundle':<11} {'files':>6} {'unzipped':>10} {'zipped':>9}  under Lambda's 250 MB unzipped limit by"
    ]
    for b in built:
        lines.append(
            f"{b.bundle.name:<11} {b.files:>6} {b.unzipped_bytes / _MB:>8.1f}MB "
            f"{b.zipped_bytes / _MB:>7.1f}MB  {b.headroom_bytes / _MB:.1f} MB "
            f"({b.headroom_bytes / UNZIPPED_LIMIT_BYTES:.0%})"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.package", description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "lambda", help="default build/lambda/")
    parser.add_argument(
        "--python-version",
        default=LAMBDA_PYTHON,
        help=f"the Lambda runtime's Python (default {LAMBDA_PYTHON})",
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    built = []
    for bundle in LAMBDA_BUNDLES:
        print(f"building {bundle.name} for python{args.python_version} on linux x86_64 ...", flush=True)
        built.append(build(bundle, args.out, python_version=args.python_version))
    print(render(built))
    for b in built:
        print(f"  {b.zip_path}  (handler {b.bundle.entry_point.replace(':', '.')})")
    over = [b.bundle.name for b in built if b.headroom_bytes < 0]
    if over:
        print(f"over Lambda's unzipped limit: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
