// `staticlm serve` under load (docs/server.md): C clients each send R streamed chat requests
// back to back against a server with S slots and a queue of Q, all at once, over loopback.
// Reports requests/s (answered requests over the wall time of the burst), the time to first
// token (first SSE chunk with content) at the median and 90th percentile, and how many requests
// were turned away with 503.
//
// The server is the real binary, started with `--port 0`. Settings come from the environment:
//   STATICLM_BENCH_MODEL   checkpoint directory (default: a tiny random model made here, seed 1)
//   SERVE_CLIENTS=16 SERVE_REQUESTS=8 SERVE_SLOTS=2 SERVE_QUEUE=4 SERVE_MAX_TOKENS=16
//   SERVE_THREADS=0 (threads of the server's pool; 0 = one per core)
// Usage: build/bench_serve_load [--benchmark_format=json]
#include <benchmark/benchmark.h>
#include <httplib.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// The server process: started once, stopped with SIGTERM at exit.
struct Server {
  pid_t pid = -1;
  int port = 0;
  std::string error;

  explicit Server(const std::string& model, const fs::path& work) {
    const std::string log = (work / "server.out").string(), err = (work / "server.err").string();
    const std::string slots = std::to_string(env_int("SERVE_SLOTS", 2));
    const std::string queue = std::to_string(env_int("SERVE_QUEUE", 4));
    const std::string threads = std::to_string(env_int("SERVE_THREADS", 0));
    pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      std::freopen(log.c_str(), "w", stdout);
      std::freopen(err.c_str(), "w", stderr);
      execl(STATICLM_BIN, STATICLM_BIN, "serve", "-m", model.c_str(), "--port", "0", "--slots", slots.c_str(),
            "--queue", queue.c_str(), "--threads", threads.c_str(), nullptr);
      _exit(127);
    }
    const std::string marker = "listening on http://127.0.0.1:";
    for (int i = 0; i < 3000 && port == 0; ++i) {  // loading a large checkpoint takes a while
      const std::string out = slurp(log);
      const auto at = out.find(marker);
      if (at != std::string::npos && out.find(' ', at + marker.size()) != std::string::npos) {
        port = std::stoi(out.substr(at + marker.size()));
      } else if (waitpid(pid, nullptr, WNOHANG) == pid) {
        pid = -1;
        error = "the server exited: " + slurp(err);
        return;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    if (port == 0) error = "the server did not report its port";
  }
  ~Server() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
  }
};

struct Outcome {
  int status = 0;
  double ttft_s = -1;  // first content chunk; -1 when none came
};

// One streamed request; the time to the first chunk that carries content.
Outcome chat(int port, int client, int request, int max_tokens) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(600, 0);
  const nlohmann::json body = {
      {"messages", {{{"role", "user"}, {"content", "Client " + std::to_string(client) + " asks question " +
                                                       std::to_string(request) + ": what is a static shape?"}}}},
      {"temperature", 0},
      {"max_tokens", max_tokens},
      {"stream", true}};
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  Outcome o;
  const auto start = Clock::now();
  std::string pending;  // bytes of an SSE event not yet complete
  req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    pending.append(data, n);
    std::size_t end;
    while (o.ttft_s < 0 && (end = pending.find("\n\n")) != std::string::npos) {
      const std::string event = pending.substr(0, end);
      pending.erase(0, end + 2);
      if (event.rfind("data: {", 0) != 0) continue;
      const auto j = nlohmann::json::parse(event.substr(6), nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.contains("choices") || j["choices"].empty()) continue;
      const auto& delta = j["choices"][0].value("delta", nlohmann::json::object());
      if (delta.contains("content") && delta["content"].is_string() && !delta["content"].get<std::string>().empty()) {
        o.ttft_s = std::chrono::duration<double>(Clock::now() - start).count();
      }
    }
    return true;
  };
  const auto res = cli.send(req);
  o.status = res ? res->status : -1;
  return o;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

void BM_ServeLoad(benchmark::State& state) {
  const fs::path work = fs::temp_directory_path() / ("staticlm_serve_load_" + std::to_string(getpid()));
  fs::create_directories(work);
  std::string model = std::getenv("STATICLM_BENCH_MODEL") ? std::getenv("STATICLM_BENCH_MODEL") : "";
  if (model.empty()) {
    model = (work / "tiny").string();
    const std::string cmd = std::string(STATICLM_BIN) + " make-model --preset tiny --seed 1 --out " + model + " >/dev/null";
    if (std::system(cmd.c_str()) != 0) {
      state.SkipWithError("make-model failed");
      return;
    }
  }
  {
    Server server(model, work);
    if (!server.error.empty()) {
      state.SkipWithError(server.error.c_str());
      fs::remove_all(work);
      return;
    }
    const int clients = env_int("SERVE_CLIENTS", 16), requests = env_int("SERVE_REQUESTS", 8);
    const int max_tokens = env_int("SERVE_MAX_TOKENS", 16);
    chat(server.port, -1, 0, max_tokens);  // warm up: the first request pays page faults
    for (auto _ : state) {
      std::mutex mu;
      std::vector<Outcome> outcomes;
      const auto start = Clock::now();
      std::vector<std::thread> threads;
      for (int c = 0; c < clients; ++c) {
        threads.emplace_back([&, c] {
          for (int r = 0; r < requests; ++r) {
            const Outcome o = chat(server.port, c, r, max_tokens);
            std::lock_guard<std::mutex> lock(mu);
            outcomes.push_back(o);
          }
        });
      }
      for (auto& t : threads) t.join();
      const double wall = std::chrono::duration<double>(Clock::now() - start).count();
      state.SetIterationTime(wall);
      std::vector<double> ttft;
      int ok = 0, rejected = 0, failed = 0, first_failure = 0;
      for (const Outcome& o : outcomes) {
        if (o.status == 200) {
          ++ok;
          if (o.ttft_s >= 0) ttft.push_back(o.ttft_s);
        } else if (o.status == 503) {
          ++rejected;
        } else {
          if (!failed++) first_failure = o.status;
        }
      }
      state.counters["requests_per_s"] = ok / wall;
      state.counters["ttft_p50_ms"] = 1e3 * percentile(ttft, 0.5);
      state.counters["ttft_p90_ms"] = 1e3 * percentile(ttft, 0.9);
      state.counters["answered"] = ok;
      state.counters["rejected_503"] = rejected;
      state.counters["failed"] = failed;
      if (failed) {
        const std::string why = std::to_string(failed) + " requests failed (neither 200 nor 503), e.g. status " +
                                std::to_string(first_failure);
        state.SkipWithError(why.c_str());
      }
    }
  }
  fs::remove_all(work);
}
BENCHMARK(BM_ServeLoad)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
