"""A harvester as CKAN's ckanext-dcat runs one, with the library it uses (rdflib): fetch the
catalogue, parse it, take every dcat:Dataset, follow hydra:nextPage (the literal ckanext-dcat
reads) until there is none, and stop at a page already seen or an empty page.

Argument: a JSON object {"url", "format": "turtle" | "json-ld" | "xml"}.
Prints one JSON object {"pages": [{"url", "datasets": [iri, ...], "titles": {iri: title}}], "stopped": why}."""
import json
import sys
import urllib.request

from rdflib import Graph, Namespace, RDF
from rdflib.namespace import DCTERMS

DCAT = Namespace("http://www.w3.org/ns/dcat#")
HYDRA = Namespace("http://www.w3.org/ns/hydra/core#")
ACCEPT = {"turtle": "text/turtle", "json-ld": "application/ld+json", "xml": "application/rdf+xml"}

args = json.loads(sys.argv[1])
url, seen, pages, stopped = args["url"], set(), [], "no next page"
while url:
    if url in seen:
        stopped = "a next page seen before: " + url
        break
    seen.add(url)
    request = urllib.request.Request(url, headers={"Accept": ACCEPT[args["format"]]})
    with urllib.request.urlopen(request, timeout=30) as response:
        body = response.read()
    graph = Graph()
    graph.parse(data=body, format=args["format"], publicID=url)
    datasets = sorted(str(s) for s in graph.subjects(RDF.type, DCAT.Dataset))
    pages.append({"url": url, "datasets": datasets, "titles": {d: str(graph.value(subject=next(s for s in graph.subjects(RDF.type, DCAT.Dataset) if str(s) == d), predicate=DCTERMS.title)) for d in datasets}})
    if not datasets:
        stopped = "an empty page"
        break
    url = None
    for collection in graph.subjects(RDF.type, HYDRA.PagedCollection):
        following = graph.value(subject=collection, predicate=HYDRA.nextPage)
        if following is not None:
            url = str(following)
print(json.dumps({"pages": pages, "stopped": stopped}))
