// WebRTC's audio processing library is C++ and reached only through CWebRTCAudio's C interface;
// this module exists so that its pkg-config file gives CWebRTCAudio the header and library paths.
