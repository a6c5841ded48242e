"""A virtual environment for `vfab-bench ab`'s B side: an existing one's
packages, unchanged, plus a patch in this one only (tools/ab_patch.py):

    .venv/bin/python tools/ab_patched_env.py .venv /tmp/slow-store --store-slower 3
    .venv/bin/python tools/ab_patched_env.py .venv /tmp/slow-zeo --zeo-reply-delay 1
    vfab-bench ab .venv /tmp/slow-store --storage memory,file,zeo --cells rows

--store-slower PERCENT: FileStorage.store busy-waits PERCENT of the time
the real store took, each call (so it is that much slower on any machine).
--zeo-reply-delay MS: ZEO's server sleeps MS milliseconds before each
reply, in its event loop (each round trip a client makes pays it once).

DEST is a new virtual environment (python -m venv, without pip, with
SOURCE's interpreter) whose site-packages adds SOURCE's at start (a .pth
file: site.addsitedir, so SOURCE's own .pth files run too) and holds the
patch and its settings; a small distribution named vfab-ab-patch, version
saying what it does, makes ab's report name it among the differences.
Nothing of SOURCE is changed.  DEST must not exist; bad input is one line
on stderr, exit 2, nothing made.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

PATCH = Path(__file__).resolve().parent / "ab_patch.py"
#: Bound on each python run here (seconds).
RUN_S = 120.0
SITE = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
#: Each setting in the patch's version: (key, word, scale, unit).
NAMES = (
    ("store_slower", "store", 100, "pct"),
    ("zeo_reply_delay_s", "zeo", 1000, "ms"),
)


class BadInput(Exception):
    pass


def site_packages(python: Path) -> Path:
    done = subprocess.run(
        [str(python), "-c", SITE],
        capture_output=True,
        text=True,
        timeout=RUN_S,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip():
        raise BadInput(f"{python} does not run: {done.stderr.strip()[-200:]}")
    return Path(done.stdout.strip())


def make(source: Path, dest: Path, settings: dict[str, float]) -> Path:
    """DEST made from SOURCE with *settings*; its python."""
    python = source / "bin" / "python"
    if not python.exists():
        raise BadInput(f"{source} is not a virtual environment (no bin/python)")
    if dest.exists() or dest.is_symlink():
        raise BadInput(f"{dest} exists: name a new directory")
    if not dest.parent.is_dir():
        raise BadInput(f"{dest.parent}: no such directory")
    theirs = site_packages(python)
    try:
        subprocess.run(
            [str(python), "-m", "venv", "--without-pip", str(dest)],
            capture_output=True,
            text=True,
            timeout=RUN_S,
            check=True,
        )
        ours = site_packages(dest / "bin" / "python")
        (ours / "00_vfab_ab_source.pth").write_text(
            f"import site; site.addsitedir({str(theirs)!r})\n"
        )
        shutil.copyfile(PATCH, ours / "vfab_ab_patch.py")
        (ours / "vfab_ab_patch.json").write_text(json.dumps(settings) + "\n")
        (ours / "vfab_ab_patch.pth").write_text("import vfab_ab_patch\n")
        version = "0+" + ".".join(
            f"{what}{settings[key] * scale:g}{unit}".replace(".", "p")
            for key, what, scale, unit in NAMES
            if settings[key]
        )
        info = ours / f"vfab_ab_patch-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: vfab-ab-patch\nVersion: {version}\n"
        )
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    return dest / "bin" / "python"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("source", type=Path, help="an existing virtual environment")
    p.add_argument("dest", type=Path, help="the new one (must not exist)")
    p.add_argument("--store-slower", type=float, metavar="PERCENT", default=0.0)
    p.add_argument("--zeo-reply-delay", type=float, metavar="MS", default=0.0)
    args = p.parse_args(argv)
    try:
        if not (0 < args.store_slower <= 1000 or 0 < args.zeo_reply_delay <= 1000):
            raise BadInput(
                "give --store-slower PERCENT or --zeo-reply-delay MS (0 to 1000)"
            )
        for value in (args.store_slower, args.zeo_reply_delay):
            if not 0 <= value <= 1000:
                raise BadInput(f"{value:g}: give 0 to 1000")
        python = make(
            args.source.expanduser().absolute(),
            args.dest.expanduser().absolute(),
            {
                "store_slower": args.store_slower / 100,
                "zeo_reply_delay_s": args.zeo_reply_delay / 1000,
            },
        )
    except BadInput as e:
        print(f"ab_patched_env: {e}", file=sys.stderr)
        return 2
    except (OSError, subprocess.SubprocessError) as e:
        print(f"ab_patched_env: cannot make {args.dest}: {e}", file=sys.stderr)
        return 2
    print(python)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
