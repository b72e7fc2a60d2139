"""HAR 1.2 logs and DOM snapshots as the recorder's step mode uploads them (annotation/lib/rawdump.py)."""

import copy
import json

from annotation.lib import rawdump
from tests.support.payloads import BlobFile


def har_entry(
    url: str = "https://www.example.com/api/items", status: int = 200, body: str = '{"items": [1, 2]}'
) -> dict:
    return {
        "startedDateTime": "2026-11-30T21:00:00.000Z",
        "time": 12.5,
        "request": {
            "method": "GET",
            "url": url,
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [{"name": "Accept", "value": "application/json"}],
            "queryString": [],
            "headersSize": -1,
            "bodySize": 0,
        },
        "response": {
            "status": status,
            "statusText": "OK",
            "httpVersion": "HTTP/1.1",
            "cookies": [],
            "headers": [{"name": "Content-Type", "value": "application/json"}],
            "content": {"size": len(body), "mimeType": "application/json", "text": body},
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": len(body),
        },
        "cache": {},
        "timings": {"send": 0.5, "wait": 10, "receive": 2},
    }


def har(entries: list | None = None) -> dict:
    entries = [har_entry()] if entries is None else entries
    return {"log": {"version": "1.2", "creator": {"name": "webtasks-recorder", "version": "1"}, "entries": entries}}


def dom_snapshot(url: str = "https://www.example.com/search") -> dict:
    return {
        "format": rawdump.DOM_SNAPSHOT_FORMAT,
        "url": url,
        "computedStyles": ["display", "visibility"],
        "strings": ["#document", "HTML", "block", "visible"],
        "documents": [
            {
                "documentURL": 0,
                "nodes": {"nodeName": [0, 1], "parentIndex": [-1, 0], "backendNodeId": [1, 2]},
                "layout": {"nodeIndex": [1], "bounds": [[0, 0, 1280, 800]], "styles": [[2, 3]], "text": [-1]},
                "textBoxes": {},
            }
        ],
    }


def as_blob(value: dict, media_type: str) -> BlobFile:
    return BlobFile(json.dumps(value).encode(), media_type)


def har_blob(value: dict | None = None) -> BlobFile:
    return as_blob(har() if value is None else value, rawdump.HAR_MEDIA_TYPE)


def dom_blob(value: dict | None = None) -> BlobFile:
    return as_blob(dom_snapshot() if value is None else value, rawdump.DOM_SNAPSHOT_MEDIA_TYPE)


def changed(value: dict, path: list, new) -> dict:
    """A deep copy of ``value`` with the item at ``path`` replaced (or removed when ``new`` is ``...``)."""
    value = copy.deepcopy(value)
    holder = value
    for key in path[:-1]:
        holder = holder[key]
    if new is ...:
        del holder[path[-1]]
    else:
        holder[path[-1]] = new
    return value
