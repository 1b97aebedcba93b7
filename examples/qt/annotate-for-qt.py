#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Copy a D-Bus interface XML, adding the type annotations Qt 5's qdbusxml2cpp needs.

    annotate-for-qt.py IN.xml OUT.xml

qdbusxml2cpp (Qt 5) maps most D-Bus types by itself, but stops at a{sv} and
aa{sv} ("Got unknown type `a{sv}'") unless the XML names the Qt type:
org.qtproject.QtDBus.QtTypeName.In<N>/Out<N> on a method or signal,
org.qtproject.QtDBus.QtTypeName on a property. This adds exactly those two
mappings; any other type Qt cannot map still makes qdbusxml2cpp fail.
"""
import sys
import xml.etree.ElementTree as ET

QT_TYPES = {'a{sv}': 'QVariantMap', 'aa{sv}': 'QList<QVariantMap>'}
ANNOTATION = 'org.qtproject.QtDBus.QtTypeName'


def annotate(member, direction_of):
    counts = {'in': 0, 'out': 0}
    for arg in member.findall('arg'):
        direction = direction_of(arg)
        qt_type = QT_TYPES.get(arg.get('type'))
        if qt_type:
            name = f"{ANNOTATION}.{direction.capitalize()}{counts[direction]}"
            ET.SubElement(member, 'annotation', name=name, value=qt_type)
        counts[direction] += 1


def main(source, destination):
    tree = ET.parse(source)  # not well-formed XML: an error, and no output
    for interface in tree.getroot().findall('interface'):
        for method in interface.findall('method'):
            annotate(method, lambda arg: arg.get('direction', 'in'))
        for signal in interface.findall('signal'):
            annotate(signal, lambda arg: 'out')
        for prop in interface.findall('property'):
            qt_type = QT_TYPES.get(prop.get('type'))
            if qt_type:
                ET.SubElement(prop, 'annotation', name=ANNOTATION, value=qt_type)
    tree.write(destination, encoding='utf-8', xml_declaration=False)


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit(__doc__.splitlines()[2].strip())
    main(sys.argv[1], sys.argv[2])
