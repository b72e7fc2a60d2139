"""Template scripts and styles from CDNs, served from vendored copies (``docs/form-tasks.md``, "Template scripts").

TurkingBench templates load jQuery, jQuery UI, Bootstrap, Popper and the like from CDNs; many of them build, fill or
hide fields with those scripts. Where the Internet is blocked (tests, benchmark runs, closed deployments) the
scripts fail and the page differs from the one the official data were collected on. The platform keeps pinned
copies of the npm packages of these libraries in ``static/vendor/<package>@<version>/`` (with their licences; the
packages are pinned in ``package.json`` and copied by ``devtools/vendor_scripts.py``) and ``URL_MAP`` says which
CDN URL is served by which copy. ``rewrite`` points a template's mapped ``<script src>`` and ``<link href>`` at
``/static/vendor/…``, the same path on the web app (WhiteNoise) and on the agents' loopback server
(``agents.server``), so workers' task frames and agents' browsers load the same files.

Modes (the web app's ``TEMPLATE_SCRIPTS`` setting, the agents' ``scripts=`` argument): ``vendored`` (default) rewrites
mapped URLs; ``original`` leaves the template as written (a deployment with Internet access that wants the CDNs).

Pure: no Django, importable by researchers' own code.
"""

from __future__ import annotations

import re
from pathlib import Path

VENDORED, ORIGINAL = "vendored", "original"
MODES = (VENDORED, ORIGINAL)
VENDOR_URL = "/static/vendor/"
VENDOR_DIR = Path(__file__).resolve().parent.parent / "static" / "vendor"

# Local folder → (npm alias in package.json's devDependencies, the files and folders copied from the package).
# Where npm has no package of the CDN's version the nearest one is used (noted in URL_MAP's comments).
# Popper and Varnish ship no licence file: their package.json (kept) declares it (MIT, Apache-2.0).
BS3_CSS = ["dist/css/bootstrap.min.css", "dist/css/bootstrap-theme.min.css"]
PACKAGES: dict[str, tuple[str, list[str]]] = {
    "jquery@1.9.1": ("jquery-1.9.1", ["jquery.min.js", "MIT-LICENSE.txt"]),
    "jquery@1.11.2": ("jquery-1.11.2", ["dist/jquery.min.js", "MIT-LICENSE.txt"]),
    "jquery@3.1.0": ("jquery-3.1.0", ["dist/jquery.min.js", "dist/jquery.slim.min.js", "LICENSE.txt"]),
    "jquery@3.2.1": ("jquery-3.2.1", ["dist/jquery.min.js", "dist/jquery.slim.min.js", "LICENSE.txt"]),
    "jquery@3.3.1": ("jquery-3.3.1", ["dist/jquery.min.js", "dist/jquery.slim.min.js", "LICENSE.txt"]),
    "jquery-ui-dist@1.12.1": (
        "jquery-ui-dist-1.12.1",
        ["jquery-ui.min.js", "jquery-ui.min.css", "images", "LICENSE.txt"],
    ),
    "jquery.cookie@1.4.1": ("jquery.cookie-1.4.1", ["jquery.cookie.js", "MIT-LICENSE.txt"]),
    "bootstrap@3.1.1": ("bootstrap-3.1.1", ["dist/js/bootstrap.min.js", *BS3_CSS, "dist/fonts", "LICENSE"]),
    "bootstrap@3.3.4": ("bootstrap-3.3.4", ["dist/js/bootstrap.min.js", *BS3_CSS, "dist/fonts", "LICENSE"]),
    "bootstrap@3.3.7": ("bootstrap-3.3.7", ["dist/js/bootstrap.min.js", *BS3_CSS, "dist/fonts", "LICENSE"]),
    "bootstrap@4.0.0": (
        "bootstrap-4.0.0",
        ["dist/js/bootstrap.min.js", "dist/js/bootstrap.bundle.min.js", "dist/css/bootstrap.min.css", "LICENSE"],
    ),
    "popper.js@1.12.9": ("popper.js-1.12.9", ["dist/umd/popper.min.js", "package.json"]),
    "lightbox2@2.11.1": (
        "lightbox2-2.11.1",
        ["dist/js/lightbox-plus-jquery.min.js", "dist/js/lightbox.min.js", "dist/css", "dist/images", "LICENSE"],
    ),
    "bootstrap-slider@10.6.1": ("bootstrap-slider-10.6.1", ["dist", "LICENSE.md"]),
    "tachyons@4.10.0": ("tachyons-4.10.0", ["css/tachyons.min.css", "license"]),
    "@allenai/varnish@0.3.22": ("varnish-0.3.22", ["theme.css", "package.json"]),
}

# CDN URL (without its scheme: http, https and protocol-relative are the same) → vendored file.
URL_MAP: dict[str, str] = {
    # jQuery
    # 1.4: npm's oldest browser build is 1.9.1
    "ajax.googleapis.com/ajax/libs/jquery/1.4/jquery.min.js": "jquery@1.9.1/jquery.min.js",
    "ajax.googleapis.com/ajax/libs/jquery/1.11.2/jquery.min.js": "jquery@1.11.2/dist/jquery.min.js",
    "code.jquery.com/jquery-1.11.2.min.js": "jquery@1.11.2/dist/jquery.min.js",
    "ajax.googleapis.com/ajax/libs/jquery/3.1.0/jquery.min.js": "jquery@3.1.0/dist/jquery.min.js",
    "code.jquery.com/jquery-3.1.0.min.js": "jquery@3.1.0/dist/jquery.min.js",
    "code.jquery.com/jquery-3.1.0.slim.min.js": "jquery@3.1.0/dist/jquery.slim.min.js",
    "ajax.googleapis.com/ajax/libs/jquery/3.2.1/jquery.min.js": "jquery@3.2.1/dist/jquery.min.js",
    "code.jquery.com/jquery-3.2.1.min.js": "jquery@3.2.1/dist/jquery.min.js",
    "code.jquery.com/jquery-3.2.1.slim.min.js": "jquery@3.2.1/dist/jquery.slim.min.js",
    "ajax.googleapis.com/ajax/libs/jquery/3.3.1/jquery.min.js": "jquery@3.3.1/dist/jquery.min.js",
    "code.jquery.com/jquery-3.3.1.min.js": "jquery@3.3.1/dist/jquery.min.js",
    "code.jquery.com/jquery-3.3.1.slim.min.js": "jquery@3.3.1/dist/jquery.slim.min.js",
    "cdnjs.cloudflare.com/ajax/libs/jquery-cookie/1.4.1/jquery.cookie.min.js": "jquery.cookie@1.4.1/jquery.cookie.js",
    # jQuery UI 1.8 (npm's oldest browser build is 1.12.1)
    "ajax.googleapis.com/ajax/libs/jqueryui/1.8/jquery-ui.min.js": "jquery-ui-dist@1.12.1/jquery-ui.min.js",
    "ajax.googleapis.com/ajax/libs/jqueryui/1.8/themes/base/jquery-ui.css": "jquery-ui-dist@1.12.1/jquery-ui.min.css",
    # Bootstrap (3.0.x is not on npm: 3.1.1; MTurk's own "bs30" stylesheet is Bootstrap 3.0)
    "s3.amazonaws.com/mturk-public/bs30/css/bootstrap.min.css": "bootstrap@3.1.1/dist/css/bootstrap.min.css",
    "maxcdn.bootstrapcdn.com/bootstrap/3.0.3/css/bootstrap.min.css": "bootstrap@3.1.1/dist/css/bootstrap.min.css",
    "maxcdn.bootstrapcdn.com/bootstrap/3.0.3/js/bootstrap.min.js": "bootstrap@3.1.1/dist/js/bootstrap.min.js",
    "maxcdn.bootstrapcdn.com/bootstrap/3.3.4/css/bootstrap.min.css": "bootstrap@3.3.4/dist/css/bootstrap.min.css",
    "maxcdn.bootstrapcdn.com/bootstrap/3.3.4/css/bootstrap-theme.min.css": (
        "bootstrap@3.3.4/dist/css/bootstrap-theme.min.css"
    ),
    "maxcdn.bootstrapcdn.com/bootstrap/3.3.4/js/bootstrap.min.js": "bootstrap@3.3.4/dist/js/bootstrap.min.js",
    "maxcdn.bootstrapcdn.com/bootstrap/3.3.7/css/bootstrap.min.css": "bootstrap@3.3.7/dist/css/bootstrap.min.css",
    "maxcdn.bootstrapcdn.com/bootstrap/3.3.7/css/bootstrap-theme.min.css": (
        "bootstrap@3.3.7/dist/css/bootstrap-theme.min.css"
    ),
    "maxcdn.bootstrapcdn.com/bootstrap/3.3.7/js/bootstrap.min.js": "bootstrap@3.3.7/dist/js/bootstrap.min.js",
    "maxcdn.bootstrapcdn.com/bootstrap/4.0.0/css/bootstrap.min.css": "bootstrap@4.0.0/dist/css/bootstrap.min.css",
    "maxcdn.bootstrapcdn.com/bootstrap/4.0.0/js/bootstrap.min.js": "bootstrap@4.0.0/dist/js/bootstrap.min.js",
    "stackpath.bootstrapcdn.com/bootstrap/4.0.0/js/bootstrap.min.js": "bootstrap@4.0.0/dist/js/bootstrap.min.js",
    "cdnjs.cloudflare.com/ajax/libs/popper.js/1.12.9/umd/popper.min.js": "popper.js@1.12.9/dist/umd/popper.min.js",
    "cdnjs.cloudflare.com/ajax/libs/bootstrap-slider/10.6.1/bootstrap-slider.js": (
        "bootstrap-slider@10.6.1/dist/bootstrap-slider.js"
    ),
    "cdnjs.cloudflare.com/ajax/libs/bootstrap-slider/10.6.1/bootstrap-slider.min.js": (
        "bootstrap-slider@10.6.1/dist/bootstrap-slider.min.js"
    ),
    "cdnjs.cloudflare.com/ajax/libs/bootstrap-slider/10.6.1/css/bootstrap-slider.min.css": (
        "bootstrap-slider@10.6.1/dist/css/bootstrap-slider.min.css"
    ),
    # Others
    "cdnjs.cloudflare.com/ajax/libs/lightbox2/2.11.1/js/lightbox-plus-jquery.min.js": (
        "lightbox2@2.11.1/dist/js/lightbox-plus-jquery.min.js"
    ),
    "cdnjs.cloudflare.com/ajax/libs/lightbox2/2.11.1/css/lightbox.min.css": (
        "lightbox2@2.11.1/dist/css/lightbox.min.css"
    ),
    "unpkg.com/tachyons@4.10.0/css/tachyons.min.css": "tachyons@4.10.0/css/tachyons.min.css",
    "cdn.jsdelivr.net/npm/@allenai/varnish@0.3.18/theme.css": "@allenai/varnish@0.3.22/theme.css",  # 0.3.18: not on npm
}

_TAG = re.compile(r"<(script|link)\b[^>]*>", re.IGNORECASE)
_ATTR = re.compile(r"""\s([\w:-]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'>]+))?""")
_SRI = re.compile(r"""\s(?:integrity|crossorigin)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s"'>]+))?""", re.IGNORECASE)


def _key(url: str) -> str | None:
    """The map's key of an absolute or protocol-relative URL (scheme dropped), or None for a page-relative one."""
    url = url.strip()
    for prefix in ("https://", "http://", "//"):
        if url.lower().startswith(prefix):
            return url[len(prefix) :].split("#")[0]
    return None


def local_path(url: str) -> str | None:
    """The vendored file serving ``url`` (relative to ``static/vendor/``), or None."""
    key = _key(url)
    return URL_MAP.get(key) if key else None


def _tag_url(tag: str) -> tuple[str, str, str] | None:
    """(kind, attribute, url) of an external ``<script src>`` or ``<link rel=stylesheet href>`` tag."""
    attrs = {}
    for match in _ATTR.finditer(tag[tag.index(" ") :] if " " in tag else ""):
        value = (match.group(2) or "").strip("\"'")
        attrs.setdefault(match.group(1).lower(), value)
    if tag[1:].lower().startswith("script"):
        kind, attribute = "script", "src"
    elif "stylesheet" in attrs.get("rel", "").lower():
        kind, attribute = "style", "href"
    else:
        return None
    url = attrs.get(attribute, "")
    return (kind, attribute, url) if _key(url) else None


def external_assets(template: str) -> list[dict]:
    """Each external script and stylesheet of a template, in order, once: ``{"url", "kind": "script"|"style",
    "local": vendored file or None}``."""
    seen, assets = set(), []
    for match in _TAG.finditer(template):
        found = _tag_url(match.group(0))
        if found and found[2] not in seen:
            seen.add(found[2])
            assets.append({"url": found[2], "kind": found[0], "local": local_path(found[2])})
    return assets


def rewrite(template: str, mode: str = VENDORED, base: str = VENDOR_URL) -> str:
    """The template with each mapped script and stylesheet URL pointing at its vendored copy under ``base`` (its
    ``integrity`` and ``crossorigin`` dropped: the copy may be a neighbouring version). ``original``: unchanged."""
    if mode not in MODES:
        raise ValueError(f"scripts mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == ORIGINAL:
        return template

    def replace(match: re.Match) -> str:
        tag = match.group(0)
        found = _tag_url(tag)
        local = local_path(found[2]) if found else None
        if local is None:
            return tag
        return _SRI.sub("", tag.replace(found[2], base + local, 1))

    return _TAG.sub(replace, template)


def vendored_file(path: str) -> Path | None:
    """The file under ``static/vendor/`` for a request path below ``VENDOR_URL``, or None (missing, or outside)."""
    relative = path[len(VENDOR_URL) :] if path.startswith(VENDOR_URL) else None
    if not relative or ".." in relative.split("/"):
        return None
    candidate = (VENDOR_DIR / relative).resolve()
    if VENDOR_DIR.resolve() not in candidate.parents or not candidate.is_file():
        return None
    return candidate
