// A self-signed certificate and its key for a TLS test, made by the openssl program
// (scripts/setup installs it): valid for `ip` and localhost, for a day.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace weir::test {

struct TlsFiles {
  std::string certificate;  // PEM; also what a client trusts
  std::string privateKey;   // PEM
};

inline TlsFiles makeSelfSignedCertificate(const std::filesystem::path& folder, const std::string& ip = "127.0.0.1") {
  std::filesystem::create_directories(folder);
  TlsFiles files{(folder / "cert.pem").string(), (folder / "key.pem").string()};
  const std::string command =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=IP:" + ip + ",DNS:localhost -keyout " +
      files.privateKey + " -out " + files.certificate + " 2>/dev/null";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("openssl could not make a certificate: " + command);
  return files;
}

}  // namespace weir::test
