# Writes a C++ file that holds the Web UI's index.html as a string (no disk reads at run
# time). Run by CMake at build time: -DINPUT=index.html -DOUTPUT=assets.cc
file(READ ${INPUT} CONTENT HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," BYTES "${CONTENT}")
file(WRITE ${OUTPUT} "// Generated from src/rest/assets/index.html by embed_assets.cmake; do not edit.\n"
  "#include \"rest/assets.h\"\n\nnamespace weir::rest {\n\nnamespace {\nconst char kIndexHtml[] = {${BYTES} 0};\n}  // namespace\n\n"
  "const std::map<std::string, Asset>& assets() {\n"
  "  static const std::map<std::string, Asset> files{\n"
  "      {\"/\", {kIndexHtml, \"text/html; charset=utf-8\"}},\n"
  "      {\"/index.html\", {kIndexHtml, \"text/html; charset=utf-8\"}},\n"
  "  };\n  return files;\n}\n\n}  // namespace weir::rest\n")
