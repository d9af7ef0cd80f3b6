#include "support/web_driver.h"

#include "support/free_port.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <thread>

namespace weir::test {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

constexpr const char* kElement = "element-6066-11e4-a52e-4f735466cecf";  // W3C's key of an element reference

std::string fromBase64(const std::string& in) {
  std::string out;
  int bits = 0;
  unsigned value = 0;
  for (char c : in) {
    int d = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+' ? 62 : c == '/' ? 63 : -1;
    if (d < 0) continue;  // padding, line breaks
    value = (value << 6) | static_cast<unsigned>(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((value >> bits) & 0xff);
    }
  }
  return out;
}

}  // namespace

std::string WebDriver::chromedriverPath() { return fs::exists("/usr/bin/chromedriver") ? "/usr/bin/chromedriver" : ""; }

std::string WebDriver::chromiumPath() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(path)) return path;
  return "";
}

WebDriver::WebDriver(int width, int height, bool acceptInsecureCerts) {
  if (chromedriverPath().empty() || chromiumPath().empty())
    throw std::runtime_error("chromium and chromedriver are not installed (scripts/setup --browser)");
  const int port = freeLoopbackPort();
  // Made before fork(): the child of a process with threads may only exec.
  const std::string driver = chromedriverPath(), portFlag = "--port=" + std::to_string(port);
  driver_ = ::fork();
  if (driver_ == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(driver.c_str(), "chromedriver", portFlag.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  http_ = std::make_unique<httplib::Client>("127.0.0.1", port);
  http_->set_read_timeout(60, 0);
  bool ready = false;
  for (auto deadline = std::chrono::steady_clock::now() + 20s; !ready && std::chrono::steady_clock::now() < deadline;) {
    if (auto r = http_->Get("/status"); r && r->status == 200)
      ready = json::parse(r->body, nullptr, false).value("value", json::object()).value("ready", false);
    if (!ready) std::this_thread::sleep_for(50ms);
  }
  if (!ready) {
    ::kill(driver_, SIGKILL);
    ::waitpid(driver_, nullptr, 0);
    driver_ = -1;
    throw std::runtime_error("chromedriver did not come up on port " + std::to_string(port));
  }
  const json args = {"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--window-size=" + std::to_string(width) + "," + std::to_string(height)};
  const json capabilities = {{"capabilities",
                              {{"alwaysMatch",
                                {{"browserName", "chrome"},
                                 {"acceptInsecureCerts", acceptInsecureCerts},
                                 {"unhandledPromptBehavior", "ignore"},
                                 {"goog:chromeOptions", {{"binary", chromiumPath()}, {"args", args}}}}}}}};
  try {
    session_ = call("POST", "/session", capabilities).value("sessionId", "");
  } catch (...) {
    ::kill(driver_, SIGKILL);
    ::waitpid(driver_, nullptr, 0);
    driver_ = -1;
    throw;
  }
}

WebDriver::~WebDriver() {
  if (!session_.empty()) http_->Delete("/session/" + session_);  // closes Chromium
  if (driver_ > 0) {
    ::kill(driver_, SIGTERM);
    ::waitpid(driver_, nullptr, 0);
  }
}

json WebDriver::call(const std::string& method, const std::string& path, const json& body) {
  httplib::Result r = method == "GET"      ? http_->Get(path)
                      : method == "DELETE" ? http_->Delete(path)
                                           : http_->Post(path, body.is_null() ? "{}" : body.dump(), "application/json");
  if (!r) throw std::runtime_error("chromedriver did not answer " + method + " " + path);
  const json answer = json::parse(r->body, nullptr, false);
  const json value = answer.is_object() ? answer.value("value", json()) : json();
  if (r->status != 200 || (value.is_object() && value.contains("error")))
    throw std::runtime_error(method + " " + path + ": " + (value.is_object() ? value.value("error", "") + ": " +
                                                                                   value.value("message", "")
                                                                             : r->body));
  return answer.contains("sessionId") ? answer : value;
}

void WebDriver::open(const std::string& url) { call("POST", "/session/" + session_ + "/url", {{"url", url}}); }

std::string WebDriver::find(const std::string& css) {
  const json found = call("POST", "/session/" + session_ + "/element", {{"using", "css selector"}, {"value", css}});
  return found.value(kElement, "");
}

std::string WebDriver::await(const std::string& css, std::chrono::milliseconds timeout) {
  for (auto deadline = std::chrono::steady_clock::now() + timeout;; std::this_thread::sleep_for(50ms)) {
    try {
      // Shown, not only present: the page builds parts of itself while they are hidden,
      // and a click on those is refused ("element not interactable").
      const std::string element = find(css);
      if (call("GET", "/session/" + session_ + "/element/" + element + "/displayed").get<bool>()) return element;
    } catch (const std::runtime_error&) {
    }
    if (std::chrono::steady_clock::now() >= deadline) return "";
  }
}

namespace {

// Runs `act` on a fresh find of `css` until no redraw came in between.
template <class F>
auto onFresh(WebDriver& driver, const std::string& css, F act) {
  for (int attempt = 0;; ++attempt) {
    try {
      return act(driver.find(css));
    } catch (const std::runtime_error& e) {
      if (attempt >= 20 || std::string(e.what()).find("stale element reference") == std::string::npos) throw;
    }
  }
}

}  // namespace

void WebDriver::clickOn(const std::string& css) {
  onFresh(*this, css, [this](const std::string& element) { click(element); });
}

std::string WebDriver::textOf(const std::string& css) {
  return onFresh(*this, css, [this](const std::string& element) { return text(element); });
}

void WebDriver::click(const std::string& element) {
  call("POST", "/session/" + session_ + "/element/" + element + "/click", json::object());
}

std::string WebDriver::text(const std::string& element) {
  return call("GET", "/session/" + session_ + "/element/" + element + "/text").get<std::string>();
}

json WebDriver::run(const std::string& script, const json& args) {
  return call("POST", "/session/" + session_ + "/execute/sync", {{"script", script}, {"args", args}});
}

bool WebDriver::awaitTrue(const std::string& script, std::chrono::milliseconds timeout) {
  for (auto deadline = std::chrono::steady_clock::now() + timeout;; std::this_thread::sleep_for(50ms)) {
    try {
      if (run(script) == true) return true;
    } catch (const std::runtime_error&) {  // the page is changing under the script
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
  }
}

std::string WebDriver::awaitDialog(std::chrono::milliseconds timeout) {
  for (auto deadline = std::chrono::steady_clock::now() + timeout;; std::this_thread::sleep_for(50ms)) {
    try {
      return call("GET", "/session/" + session_ + "/alert/text").get<std::string>();
    } catch (const std::runtime_error&) {
      if (std::chrono::steady_clock::now() >= deadline) return "";
    }
  }
}

void WebDriver::typeInDialog(const std::string& text) {
  call("POST", "/session/" + session_ + "/alert/text", {{"text", text}});
}

void WebDriver::acceptDialog() { call("POST", "/session/" + session_ + "/alert/accept", json::object()); }

void WebDriver::screenshot(const fs::path& png) {
  const std::string bytes = fromBase64(call("GET", "/session/" + session_ + "/screenshot").get<std::string>());
  fs::create_directories(png.parent_path());
  std::ofstream(png, std::ios::binary) << bytes;
}

}  // namespace weir::test
