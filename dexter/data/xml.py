"""Parsing XML that came from the network: no entities expanded, no DTD, no network.

Every SEC document dexter reads as XML (Form 3/4/5, 13F cover pages and information
tables, XBRL instances, inline XBRL, label linkbases) goes through :func:`parse_xml`, so a
hostile document cannot expand entities (the "billion laughs"), read a local file through
an external entity, or make the parser fetch a URL. lxml is imported on first use: start-up
does not pay for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lxml import etree


class XmlError(ValueError):
    """The text is not a document dexter can read as XML."""


def parse_xml(text: str | bytes, *, html_fallback: bool = False) -> etree._Element:
    """The root element of ``text``. With ``html_fallback``, a document that is not
    well-formed XML (some inline XBRL files) is read with the forgiving HTML parser, whose
    tag and attribute names are lower case (``ix:nonfraction``, ``contextref``)."""
    from lxml import etree

    data = text.encode("utf-8") if isinstance(text, str) else text
    data = data.lstrip()  # a blank line before the declaration is an error to libxml2
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             huge_tree=False, remove_comments=True, recover=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        if not html_fallback:
            raise XmlError(f"not well-formed XML ({exc})") from None
        html = etree.HTMLParser(no_network=True, remove_comments=True, huge_tree=False)
        root = etree.fromstring(data, html)
    if root is None:
        raise XmlError("an empty document")
    return root


def local(tag: object) -> str:
    """A tag's local name in lower case: ``{ns}nonFraction`` and ``ix:nonfraction`` are
    both ``nonfraction``."""
    name = tag if isinstance(tag, str) else ""
    name = name.rsplit("}", 1)[-1]
    return name.rsplit(":", 1)[-1].lower()


def attr(element: etree._Element, name: str) -> str:
    """An attribute by its local name, any case and namespace ('' when absent)."""
    wanted = name.lower()
    for key, value in element.attrib.items():
        if local(key) == wanted:
            return str(value)
    return ""


def children(element: etree._Element, name: str) -> Iterator[etree._Element]:
    """Direct children with this local name."""
    wanted = name.lower()
    for child in element:
        if local(child.tag) == wanted:
            yield child


def child(element: etree._Element | None, *path: str) -> etree._Element | None:
    """The first descendant along ``path`` (local names), or None."""
    node = element
    for name in path:
        if node is None:
            return None
        node = next(children(node, name), None)
    return node


def text_of(element: etree._Element | None, *path: str) -> str:
    """The stripped text of the element at ``path`` ('' when absent)."""
    node = child(element, *path) if path else element
    if node is None:
        return ""
    return " ".join("".join(str(t) for t in node.itertext()).split())


def descendants(element: etree._Element, name: str) -> Iterator[etree._Element]:
    """Every descendant with this local name, in document order."""
    wanted = name.lower()
    for node in element.iter():
        if isinstance(node.tag, str) and local(node.tag) == wanted:
            yield node
