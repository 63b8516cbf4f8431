#include "backends/cpu/check/barrier_check.hpp"

#include "core/errors.hpp"

namespace devctx::detail::cpu::check {

std::string describe(const BarrierSite& site) {
  if (site.file.empty()) return "an unknown place";
  return concat(site.file, ':', site.line, ':', site.column);
}

void BarrierCheck::begin_block(std::uint32_t threads) {
  passed_.assign(threads, 0);
  completed_ = 0;
  open_ = false;
  open_site_ = {};
  last_site_ = {};
  exited_ = kNone;
}

std::optional<Divergence> BarrierCheck::arrive(std::uint32_t rank, const BarrierSite& site) {
  passed_[rank] = completed_ + 1;
  if (exited_ != kNone) {
    return Divergence{Divergence::Kind::exited, completed_ + 1, rank, site, exited_, passed_[exited_], {}};
  }
  if (!open_) {
    open_ = true;
    open_first_ = rank;
    open_site_ = site;
    return std::nullopt;
  }
  if (site != open_site_)
    return Divergence{Divergence::Kind::different_sites, completed_ + 1, open_first_, open_site_, rank, 0, site};
  return std::nullopt;
}

void BarrierCheck::complete() noexcept {
  ++completed_;
  open_ = false;
  last_site_ = open_site_;
}

std::optional<Divergence> BarrierCheck::exit(std::uint32_t rank) {
  const std::uint32_t passed = passed_[rank];
  if (passed == 0) return std::nullopt;  // never took part in a barrier
  if (open_) return Divergence{Divergence::Kind::exited, completed_ + 1, open_first_, open_site_, rank, passed, {}};
  if (exited_ == kNone) exited_ = rank;
  return std::nullopt;
}

}  // namespace devctx::detail::cpu::check
