"""OWSLib reads a feature type's schema (WFS DescribeFeatureType) as a GIS script does with
`get_schema`: the properties it found, with their types, and the geometry.

Argument: a JSON object {"url", "token" (or null), "typenames": {version: name}}.
Prints one JSON object {version: {"properties", "geometry", "geometry_column"}}."""
import json
import sys

from owslib.wfs import WebFeatureService

args = json.loads(sys.argv[1])
headers = {"Authorization": "Bearer " + args["token"]} if args.get("token") else None
out = {}
for version, typename in args["typenames"].items():
    wfs = WebFeatureService(args["url"], version=version, headers=headers, timeout=60)
    schema = wfs.get_schema(typename)
    out[version] = {key: schema.get(key) for key in ("properties", "geometry", "geometry_column")}
print(json.dumps(out))
