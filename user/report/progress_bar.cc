#include "report/progress_bar.h"

#include <unistd.h>

namespace jackdaw::report {

ProgressBar::ProgressBar(FILE* out, int force_tty)
    : out_(out), tty_(force_tty >= 0 ? force_tty != 0 : isatty(fileno(out)) != 0) {}

ProgressBar::~ProgressBar() { Finish(); }

void ProgressBar::Update(std::string_view stage, uint64_t done, uint64_t total) {
  constexpr int kWidth = 30;
  const bool new_stage = stage != stage_;
  if (new_stage) {
    Finish();
    stage_ = stage;
    last_percent_ = -1;
  }
  const int percent = total ? static_cast<int>(100 * std::min(done, total) / total) : 100;
  const bool end = done >= total;
  if (!tty_) {
    // Logs: one line per stage, when it ends.
    if (end && percent != last_percent_) {
      fprintf(out_, "jackdaw: %s: %llu/%llu done\n", stage_.c_str(),
              static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
      fflush(out_);
    }
    last_percent_ = percent;
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (percent == last_percent_ || (!end && !new_stage && now - last_draw_ < kRedrawInterval))
    return;
  last_percent_ = percent;
  last_draw_ = now;
  const int filled = percent * kWidth / 100;
  fprintf(out_, "\r%-14s [%.*s%*s] %3d%% %llu/%llu", stage_.c_str(), filled,
          "##############################", kWidth - filled, "", percent,
          static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
  fflush(out_);
  line_open_ = true;
}

void ProgressBar::Finish() {
  if (line_open_) {
    fputc('\n', out_);
    fflush(out_);
    line_open_ = false;
  }
}

cluster::ProgressCallback ProgressBar::Callback() {
  return
      [this](std::string_view stage, uint64_t done, uint64_t total) { Update(stage, done, total); };
}

}  // namespace jackdaw::report
