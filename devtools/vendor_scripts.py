"""Copy the template libraries' files from the npm packages into ``static/vendor/`` (``agents/vendor.py``).

The packages are pinned in ``package.json`` (devDependencies, npm aliases such as ``jquery-3.2.1``); the copies are
committed, so the platform runs without npm. After changing a version or adding a library to ``agents.vendor``:

    npm install --no-save --prefix /tmp/vendor <the aliases>   # or a plain `npm install` in the checkout
    .venv/bin/python devtools/vendor_scripts.py /tmp/vendor/node_modules
"""

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.vendor import PACKAGES, URL_MAP, VENDOR_DIR  # noqa: E402


def main(node_modules: Path) -> None:
    shutil.rmtree(VENDOR_DIR, ignore_errors=True)
    for folder, (alias, files) in PACKAGES.items():
        for name in files:
            source, target = node_modules / alias / name, VENDOR_DIR / folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.map", "*.less", "*.scss"))
            else:
                shutil.copy2(source, target)
    missing = [local for local in URL_MAP.values() if not (VENDOR_DIR / local).is_file()]
    if missing:
        raise SystemExit(f"URL_MAP names files that were not copied: {missing}")
    print(f"copied {len(PACKAGES)} packages into {VENDOR_DIR}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "node_modules"))
