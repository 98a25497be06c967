"""Draws one WMS layer with QGIS's own WMS provider, headless, into a PNG: what a desktop GIS user sees.

Arguments: <capabilities URL> <layer> <minx,miny,maxx,maxy in EPSG:4326> <output.png> [user password]
The user name and password go into the layer's data source as QGIS's WMS connection dialog puts them
(HTTP Basic). Prints one JSON line: {"valid": bool, "error": str, "rendered": bool}.
"""
import json
import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from qgis.core import (  # noqa: E402  (QT_QPA_PLATFORM must be set first)
    QgsApplication, QgsCoordinateReferenceSystem, QgsDataSourceUri, QgsMapRendererSequentialJob,
    QgsMapSettings, QgsRasterLayer, QgsRectangle,
)
from qgis.PyQt.QtCore import QSize  # noqa: E402
from qgis.PyQt.QtGui import QColor  # noqa: E402

url, layer_name, bbox, output = sys.argv[1:5]
credentials = sys.argv[5:7]

QgsApplication.setPrefixPath("/usr", True)
app = QgsApplication([], False)
app.initQgis()

uri = QgsDataSourceUri()
uri.setParam("url", url)
uri.setParam("layers", layer_name)
uri.setParam("styles", "")
uri.setParam("format", "image/png")
uri.setParam("crs", "EPSG:4326")
if credentials:
    uri.setUsername(credentials[0])
    uri.setPassword(credentials[1])
layer = QgsRasterLayer(bytes(uri.encodedUri()).decode(), layer_name, "wms")
result = {"valid": layer.isValid(), "error": layer.error().summary() if not layer.isValid() else "", "rendered": False}
if layer.isValid():
    settings = QgsMapSettings()
    settings.setLayers([layer])
    settings.setDestinationCrs(QgsCoordinateReferenceSystem("EPSG:4326"))
    minx, miny, maxx, maxy = (float(v) for v in bbox.split(","))
    settings.setExtent(QgsRectangle(minx, miny, maxx, maxy))
    settings.setOutputSize(QSize(256, 256))
    settings.setBackgroundColor(QColor(255, 255, 255, 0))
    job = QgsMapRendererSequentialJob(settings)
    job.start()
    job.waitForFinished()
    errors = [f"{e.layerID}: {e.message}" for e in job.errors()]
    result["rendered"] = job.renderedImage().save(output, "PNG")
    result["renderErrors"] = errors
print(json.dumps(result))
app.exitQgis()
