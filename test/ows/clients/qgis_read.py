"""QGIS (headless, its Python API) as a GIS client of an open-data OWS named API: the 'WFS'
provider in WFS 1.1.0 and 2.0.0 (field types, values, extent, a bounding-box filter sent to the
server) and the 'wms' provider (the layer loads, its extent).

Argument: a JSON object {"url", "typename", "layer", "rect": [minx, miny, maxx, maxy] (longitude/latitude)}.
Prints one JSON object; the node test asserts on it."""
import json
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from qgis.core import (Qgis, QgsApplication, QgsFeatureRequest, QgsRasterLayer,  # noqa: E402
                       QgsRectangle, QgsVectorLayer)
from qgis.PyQt.QtCore import QVariant  # noqa: E402

args = json.loads(sys.argv[1])
QgsApplication.setPrefixPath("/usr", True)
app = QgsApplication([], False)
app.initQgis()


def value(v):
    if v is None or (isinstance(v, QVariant) and v.isNull()):
        return None
    if hasattr(v, "toString") and hasattr(v, "isValid"):  # QDateTime
        return v.toString("yyyy-MM-ddTHH:mm:ssZ") if v.isValid() else None
    return v


def box(rect):
    return [rect.xMinimum(), rect.yMinimum(), rect.xMaximum(), rect.yMaximum()]


out = {"qgis": Qgis.QGIS_VERSION}
for version in ("1.1.0", "2.0.0"):
    uri = f"url='{args['url']}' typename='{args['typename']}' version='{version}' srsname='EPSG:4326'"
    layer = QgsVectorLayer(uri, "sites", "WFS")
    result = {"valid": layer.isValid()}
    if layer.isValid():
        result["fields"] = {f.name(): QVariant.typeToName(f.type()) for f in layer.fields()}
        result["features"] = [
            {name: value(feature[name]) for name in result["fields"]} | {"x": feature.geometry().asPoint().x(), "y": feature.geometry().asPoint().y()}
            for feature in layer.getFeatures()
        ]
        result["extent"] = box(layer.extent())
        # The box filter sent to the server (restrictToRequestBBOX), not applied to a local copy.
        boxed = QgsVectorLayer(uri + " restrictToRequestBBOX='1'", "boxed", "WFS")
        rect = QgsRectangle(*args["rect"])
        result["inRect"] = sorted(str(f["label"]) for f in boxed.getFeatures(QgsFeatureRequest().setFilterRect(rect)))
    else:
        result["error"] = layer.error().summary()
    out["wfs" + version] = result

wms = QgsRasterLayer(f"crs=EPSG:4326&format=image/png&layers={args['layer']}&styles=&url={args['url']}", "map", "wms")
out["wms"] = {"valid": wms.isValid(), "extent": box(wms.extent()) if wms.isValid() else None,
              "error": None if wms.isValid() else wms.error().summary()}
print(json.dumps(out), flush=True)
# QGIS may crash while tearing itself down; what it read is printed already.
os._exit(0)
