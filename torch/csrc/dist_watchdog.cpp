// dist_watchdog.cpp: a heartbeat through the rendezvous store, so that the ranks of a group learn
// that one of them died while they are busy outside any collective (a long rollout), and so that
// NCCL ranks do not wait out a collective timeout for a peer that is gone (see dist.h).
//
// Each rank's watchdog thread adds 1 to "mtgrpo/hb/<rank>" every interval and reads the peers'
// counters (add 0: never blocks on a missing key). A peer whose counter has not moved for the
// timeout, or a store that no longer answers (rank 0 serves it, or the launcher's agent), is a
// failure, reported once through mt_dist_watchdog_failure. A rank that stops its watchdog first
// adds to "mtgrpo/left/<rank>", so that its silence afterwards is a departure, not a failure.
//
// The watchdog beats from its own thread: it detects processes that are gone, not ones that hang
// with a live thread; the collectives' timeout covers those.
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dist.h"
#include "dist_internal.h"
#include "shim_internal.h"

struct mt_watchdog_s {
  mt::DistRef pg;
  std::chrono::milliseconds interval{1000}, timeout{30000};
  std::thread th;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::atomic<bool> failed{false};
  std::string failure;  // set once, before failed becomes true

  void fail(const std::string& msg) {
    std::lock_guard<std::mutex> l(mu);
    if (failed.load()) return;
    failure = msg;
    failed.store(true);
  }

  static std::string key(const char* what, int rank) { return std::string("mtgrpo/") + what + "/" + std::to_string(rank); }

  void run() {
    using clock = std::chrono::steady_clock;
    std::vector<int64_t> last(pg.size, -1);
    std::vector<clock::time_point> seen(pg.size, clock::now());
    for (;;) {
      {
        std::unique_lock<std::mutex> l(mu);
        if (cv.wait_for(l, interval, [&] { return stop; })) return;
      }
      try {
        pg.store->add(key("hb", pg.rank), 1);
        auto now = clock::now();
        for (int r = 0; r < pg.size; r++) {
          if (r == pg.rank) continue;
          int64_t v = pg.store->add(key("hb", r), 0);
          if (v != last[r]) {
            last[r] = v;
            seen[r] = now;
            continue;
          }
          if (now - seen[r] < timeout || pg.store->add(key("left", r), 0) > 0) continue;
          auto s = std::chrono::duration_cast<std::chrono::seconds>(now - seen[r]).count();
          fail("rank " + std::to_string(r) + " of " + std::to_string(pg.size) + " sent no heartbeat for " +
               std::to_string(s) + " s: it died or lost its connection to the store");
          return;
        }
      } catch (const std::exception& e) {
        fail("rank " + std::to_string(pg.rank) + " lost the rendezvous store (rank 0 or the launcher's agent serves it, " +
             "so it is most likely gone): " + e.what());
        return;
      }
    }
  }
};

extern "C" {

mt_err mt_dist_watchdog_start(mt_pg h, int64_t interval_ms, int64_t timeout_ms, mt_watchdog* out) {
  MT_BEGIN
  if (interval_ms <= 0 || timeout_ms < interval_ms) {
    throw std::invalid_argument("watchdog: interval " + std::to_string(interval_ms) + " ms and timeout " +
                                std::to_string(timeout_ms) + " ms: want 0 < interval <= timeout");
  }
  auto w = std::make_unique<mt_watchdog_s>();
  w->pg = mt::dist_ref(h);
  w->interval = std::chrono::milliseconds(interval_ms);
  w->timeout = std::chrono::milliseconds(timeout_ms);
  w->pg.store->add(mt_watchdog_s::key("hb", w->pg.rank), 1);
  mt_watchdog_s* p = w.get();
  w->th = std::thread([p] { p->run(); });
  *out = w.release();
  MT_END
}

// Any thread: only the atomic flag and the message written before it are read.
int mt_dist_watchdog_failure(mt_watchdog w, char* buf, size_t cap) {
  if (w == nullptr || !w->failed.load()) return 0;
  if (cap > 0) {
    std::strncpy(buf, w->failure.c_str(), cap - 1);
    buf[cap - 1] = 0;
  }
  return 1;
}

// Any thread. Joins the watchdog thread (at most one store round trip away).
mt_err mt_dist_watchdog_stop(mt_watchdog w, int leave) {
  if (w == nullptr) return nullptr;
  try {
    {
      std::lock_guard<std::mutex> l(w->mu);
      w->stop = true;
    }
    w->cv.notify_all();
    if (w->th.joinable()) w->th.join();
    if (leave != 0 && !w->failed.load()) w->pg.store->add(mt_watchdog_s::key("left", w->pg.rank), 1);
  } catch (const std::exception& e) {
    delete w;
    return mt::errmsg((std::string("watchdog: ") + e.what()).c_str());
  }
  delete w;
  return nullptr;
}

}  // extern "C"
