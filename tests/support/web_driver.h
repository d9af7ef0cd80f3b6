// A browser a test drives as a user would: Debian's ChromeDriver running headless
// Chromium, spoken to through the W3C WebDriver protocol (JSON over HTTP on loopback).
// The Web UI tests click through pages, answer the page's dialogs, read what is shown
// and keep screenshots with it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace httplib {
class Client;
}

namespace weir::test {

class WebDriver {
 public:
  // Where Debian installs them (packages chromium and chromium-driver); empty when absent.
  static std::string chromedriverPath();
  static std::string chromiumPath();

  // Starts ChromeDriver on a free loopback port and a session of headless Chromium with
  // a window of `width` x `height`; `acceptInsecureCerts` takes a self-signed
  // certificate. Throws std::runtime_error saying what failed.
  explicit WebDriver(int width = 1280, int height = 1400, bool acceptInsecureCerts = false);
  ~WebDriver();  // ends the session and the driver
  WebDriver(const WebDriver&) = delete;
  WebDriver& operator=(const WebDriver&) = delete;

  void open(const std::string& url);
  // The element `css` selects (the first); throws when there is none.
  std::string find(const std::string& css);
  // Waits up to `timeout` for `css` to select an element that is shown; empty when it
  // never did.
  std::string await(const std::string& css, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  void click(const std::string& element);
  std::string text(const std::string& element);
  // The same for the element `css` selects, found again when the page redrew it between
  // the find and the act (a stale element reference): for tables refreshed every second.
  void clickOn(const std::string& css);
  std::string textOf(const std::string& css);
  // Runs `script` (a function body; `arguments` holds `args`) in the page; its result.
  nlohmann::json run(const std::string& script, const nlohmann::json& args = nlohmann::json::array());
  // Polls `script` until it returns true, up to `timeout`.
  bool awaitTrue(const std::string& script, std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // The open alert, confirm or prompt: its text (waits up to `timeout`; empty when none
  // opened), then what is typed in it, and its OK or Cancel.
  std::string awaitDialog(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  void typeInDialog(const std::string& text);
  void acceptDialog();
  // The page as drawn, to a PNG file.
  void screenshot(const std::filesystem::path& png);

 private:
  nlohmann::json call(const std::string& method, const std::string& path, const nlohmann::json& body = nullptr);
  pid_t driver_ = -1;
  std::unique_ptr<httplib::Client> http_;
  std::string session_;
};

}  // namespace weir::test
