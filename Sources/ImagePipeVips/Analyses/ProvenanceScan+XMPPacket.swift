// The XMP packet of the digital source type alone, which `copyright` and `safe` outputs carry.
package import Foundation
import ImagePipe

extension ProvenanceScan {

    /// A minimal, valid XMP packet (with the <?xpacket?> wrapper, x:xmpmeta, rdf:RDF, one
    /// rdf:Description) holding only Iptc4xmpExt:DigitalSourceType = value, for outputs whose
    /// metadata policy keeps the AI label but not the rest of the XMP. The value is XML-escaped.
    ///
    /// Characters XML 1.0 cannot hold at all (control characters other than tab, line feed and
    /// carriage return, and U+FFFE/U+FFFF) are left out, so the packet parses whatever the string.
    package static func xmpPacket(digitalSourceType: String) -> Data {
        let packet = """
            <?xpacket begin="\u{FEFF}" id="W5M0MpCehiHzreSzNTczkc9d"?>
            <x:xmpmeta xmlns:x="adobe:ns:meta/">
             <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
              <rdf:Description rdf:about=""
                xmlns:Iptc4xmpExt="http://iptc.org/std/Iptc4xmpExt/2008-02-29/">
               <Iptc4xmpExt:DigitalSourceType>\(escaped(digitalSourceType))</Iptc4xmpExt:DigitalSourceType>
              </rdf:Description>
             </rdf:RDF>
            </x:xmpmeta>
            <?xpacket end="w"?>
            """
        return Data(packet.utf8)
    }

    /// `text` safe as XML character data: markup characters as references (the project's one
    /// escaping, shared with its HTML), whitespace controls as character references so they
    /// survive as written, and the characters XML 1.0 cannot hold at all left out.
    private static func escaped(_ text: String) -> String {
        var kept = String.UnicodeScalarView()
        for scalar in text.unicodeScalars where scalar.value >= 0x20 || "\t\n\r".unicodeScalars.contains(scalar) {
            if scalar.value != 0xFFFE && scalar.value != 0xFFFF { kept.append(scalar) }
        }
        return String(kept).markupEscaped.replacingOccurrences(of: "\t", with: "&#9;")
            .replacingOccurrences(of: "\n", with: "&#10;").replacingOccurrences(of: "\r", with: "&#13;")
    }
}
