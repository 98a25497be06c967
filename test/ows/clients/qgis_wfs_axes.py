"""QGIS (headless) reads a WFS layer in a given WFS version, as its WFS provider does: every
feature's x/y in the layer's CRS, and the features a box filter sent to the server finds.

Argument: a JSON object {"url", "typename", "version", "rect": [minx, miny, maxx, maxy] (longitude/latitude)}.
Prints one JSON object {"valid", "error", "crs", "points": {label: [x, y]}, "inRect": [label, ...]}."""
import json
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from qgis.core import QgsApplication, QgsFeatureRequest, QgsRectangle, QgsVectorLayer  # noqa: E402

args = json.loads(sys.argv[1])
QgsApplication.setPrefixPath("/usr", True)
app = QgsApplication([], False)
app.initQgis()

uri = f"url='{args['url']}' typename='{args['typename']}' version='{args['version']}' srsname='EPSG:4326'"
layer = QgsVectorLayer(uri, "sites", "WFS")
out = {"valid": layer.isValid(), "error": None if layer.isValid() else layer.error().summary()}
if layer.isValid():
    out["crs"] = layer.crs().authid()
    out["points"] = {str(f["label"]): [f.geometry().asPoint().x(), f.geometry().asPoint().y()] for f in layer.getFeatures()}
    boxed = QgsVectorLayer(uri + " restrictToRequestBBOX='1'", "boxed", "WFS")
    request = QgsFeatureRequest().setFilterRect(QgsRectangle(*args["rect"]))
    out["inRect"] = sorted(str(f["label"]) for f in boxed.getFeatures(request))
print(json.dumps(out), flush=True)
os._exit(0)
