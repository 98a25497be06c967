"""OWSLib as a GIS client reads an OWS named API: WFS 1.0.0, 1.1.0 and 2.0.0 and WMS 1.3.0
capabilities, and a WFS 1.1.0 GetFeature with a bounding box in latitude/longitude.

Argument: a JSON object {"url", "token" (or null), "typenames": {version: name}, "layer", "bbox110"}.
Prints one JSON object of what OWSLib understood; the node test asserts on it."""
import json
import sys

from owslib.wfs import WebFeatureService
from owslib.wms import WebMapService

args = json.loads(sys.argv[1])
headers = {"Authorization": "Bearer " + args["token"]} if args.get("token") else None
out = {}


def as_list(box):
    return [float(v) for v in box[:4]] if box else None


for version in ("1.0.0", "1.1.0", "2.0.0"):
    wfs = WebFeatureService(args["url"], version=version, headers=headers, timeout=60)
    ident = wfs.identification
    typename = args["typenames"][version]
    if typename not in wfs.contents:
        sys.exit(f"WFS {version}: no {typename} in {sorted(wfs.contents.keys())}")
    layer = wfs.contents[typename]
    provider = getattr(wfs, "provider", None)
    contact = getattr(provider, "contact", None) if provider else None
    out["wfs" + version] = {
        "title": ident.title,
        "abstract": ident.abstract,
        "keywords": [k for k in (ident.keywords or []) if k],
        "typenames": sorted(wfs.contents.keys()),
        "layerTitle": layer.title,
        "wgs84": as_list(layer.boundingBoxWGS84),
        "provider": getattr(provider, "name", None) if provider else None,
        "email": getattr(contact, "email", None) if contact else None,
    }

# WFS 1.1.0: features in a box; OWSLib takes it as x/y and sends it in the URN's latitude/longitude order.
wfs = WebFeatureService(args["url"], version="1.1.0", headers=headers, timeout=60)
srs = "urn:ogc:def:crs:EPSG::4326"
answer = wfs.getfeature(typename=[args["typenames"]["1.1.0"]], bbox=tuple(args["bbox110"]) + (srs,), srsname=srs).read()
text = answer.decode("utf-8") if isinstance(answer, bytes) else answer
out["bbox110"] = {"members": text.count("<gml:featureMember>"), "text": text[:3000]}

wms = WebMapService(args["url"], version="1.3.0", headers=headers, timeout=60)
layer = wms.contents[args["layer"]]
out["wms"] = {
    "title": wms.identification.title,
    "abstract": wms.identification.abstract,
    "keywords": [k for k in (wms.identification.keywords or []) if k],
    "layers": sorted(wms.contents.keys()),
    "wgs84": as_list(layer.boundingBoxWGS84),
    "organization": wms.provider.contact.organization if wms.provider.contact else None,
    "email": wms.provider.contact.email if wms.provider.contact else None,
}
print(json.dumps(out))
