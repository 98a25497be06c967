"""QGIS (headless) loads a collection of an OGC API – Features as its 'OAPIF' provider does, as a
desktop user adds one (Layer → Add WFS / OGC API – Features Layer): the feature count, the fields,
the extent, and what a box filter sent to the server finds. A protected API takes a personal access
token as the Basic password, which QGIS's connection dialog stores in the layer's source.

Argument: a JSON object {"url", "typename", "rect": [minx, miny, maxx, maxy], "user", "password"}.
Prints one JSON object {"valid", "error", "count", "fields", "extent", "inRect"}."""
import json
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from qgis.core import (QgsApplication, QgsCredentialsNone, QgsDataSourceUri, QgsFeatureRequest,  # noqa: E402
                       QgsRectangle, QgsVectorLayer)
from qgis.PyQt.QtCore import QVariant  # noqa: E402

args = json.loads(sys.argv[1])
QgsApplication.setPrefixPath("/usr", True)
app = QgsApplication([], False)
app.initQgis()
# Headless, nobody answers a login prompt: this is the dialog's Cancel.
credentials = QgsCredentialsNone()

uri = QgsDataSourceUri()
uri.setParam("url", args["url"])
uri.setParam("typename", args["typename"])
if args.get("password"):
    uri.setUsername(args.get("user") or "qgis")
    uri.setPassword(args["password"])
layer = QgsVectorLayer(uri.uri(False), "layer", "OAPIF")
# QGIS 3.22 crashes reading the error of an OAPIF layer that did not load (QgsError::summary on a
# provider that is gone): only whether it loaded is reported.
out = {"valid": layer.isValid(), "error": None}
if layer.isValid():
    out["count"] = sum(1 for _ in layer.getFeatures())
    out["fields"] = {f.name(): QVariant.typeToName(f.type()) for f in layer.fields()}
    e = layer.extent()
    out["extent"] = [e.xMinimum(), e.yMinimum(), e.xMaximum(), e.yMaximum()]
    request = QgsFeatureRequest().setFilterRect(QgsRectangle(*args["rect"]))
    out["inRect"] = sorted(str(f["name"]) for f in layer.getFeatures(request))
print(json.dumps(out), flush=True)
os._exit(0)
