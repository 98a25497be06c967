"""OWSLib's OGC API – Features client reads an OWS named API: conformance, collections, a
collection, its queryables and items (a bbox and a CQL2 filter among them).

Argument: a JSON object {"url", "token" (or null), "collection", "bbox": [minx, miny, maxx, maxy]}.
Prints one JSON object of what OWSLib read; the node test asserts on it."""
import json
import sys

from owslib.ogcapi.features import Features

args = json.loads(sys.argv[1])
headers = {"Authorization": "Bearer " + args["token"]} if args.get("token") else None
api = Features(args["url"], headers=headers, timeout=60)
name = args["collection"]
items = api.collection_items(name, limit=1000)
boxed = api.collection_items(name, bbox=args["bbox"], limit=1000)
filtered = api.collection_items(name, filter="kind = 'oak'", limit=1000)
print(json.dumps({
    "conformsTo": api.conformance()["conformsTo"],
    "collections": sorted(api.feature_collections()),
    "collection": api.collection(name),
    "queryables": sorted(api.collection_queryables(name)["properties"].keys()),
    "numberMatched": items["numberMatched"],
    "ids": [f["id"] for f in items["features"]],
    "boxed": sorted(f["properties"]["name"] for f in boxed["features"]),
    "filtered": filtered["numberMatched"],
}))
