// SPDX-License-Identifier: Apache-2.0
// Lesson 2 - threads, blocks and grids: which thread handles which element of a 2-D array.
//
// A launch is a grid of blocks, a block is a group of threads; both can be 1-, 2- or 3-D.
// Here a 6 x 10 array (rows x columns) is covered by 4 x 4 blocks: x runs along a row
// (columns), y down the columns (rows). 10 columns need 3 blocks in x (12 threads, 2 spare) and
// 6 rows need 2 blocks in y (8 threads, 2 spare). Every thread computes its element from
//   column = block_idx().x * block_dim().x + thread_idx().x   (= global_idx().x)
//   row    = block_idx().y * block_dim().y + thread_idx().y   (= global_idx().y)
// writes its block and thread coordinates there, and the host prints the resulting map.
//
//   ./02_threads_blocks_grids
#include <cstdio>

#include <devctx/devctx.hpp>

struct Who {  // which thread wrote an element (plain struct: fine in a DeviceBuffer)
  unsigned block_x, block_y, thread_x, thread_y;
};

DEVCTX_KERNEL void who_am_i(devctx::span<Who> cells, unsigned rows, unsigned cols, devctx::span<unsigned> spare_threads) {
  const auto g = devctx::global_idx();
  const auto b = devctx::block_idx();
  const auto t = devctx::thread_idx();
  if (g.x >= cols || g.y >= rows) {  // past the edge of the array: nothing to do
    devctx::atomic_add(&spare_threads[0], 1u);
    return;
  }
  cells[g.y * cols + g.x] = Who{b.x, b.y, t.x, t.y};
}

int main() try {
  constexpr unsigned rows = 6, cols = 10;
  const devctx::Dim3 block{4, 4};
  const devctx::Dim3 grid{(cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y};

  devctx::DeviceContext ctx;
  std::printf("device: %s:%d  %s\n", devctx::to_string(ctx.api()), ctx.id(), ctx.name().c_str());
  std::printf("array %u rows x %u columns; block_dim = (%u, %u), grid_dim = (%u, %u)\n", rows, cols, block.x, block.y,
              grid.x, grid.y);
  std::printf("  -> %llu blocks x %llu threads = %llu threads for %u elements\n",
              static_cast<unsigned long long>(grid.volume()), static_cast<unsigned long long>(block.volume()),
              static_cast<unsigned long long>(grid.volume() * block.volume()), rows * cols);

  auto d_cells = ctx.enqueue_create_buffer<Who>(rows * cols);
  auto d_spare = ctx.enqueue_create_buffer<unsigned>(1);
  ctx.enqueue_memset(d_spare, 0u);
  ctx.enqueue_function<who_am_i>({.grid_dim = grid, .block_dim = block}, d_cells, rows, cols, d_spare);
  Who cells[rows * cols];
  unsigned spare = 0;
  ctx.enqueue_copy(std::span<Who>(cells), d_cells);
  ctx.enqueue_copy(std::span<unsigned>(&spare, 1), d_spare);
  ctx.synchronize();

  std::printf("\neach cell: block (x,y) / thread (x,y) that wrote it\n       ");
  for (unsigned c = 0; c < cols; ++c) std::printf(" col %-3u ", c);
  std::printf("\n");
  unsigned wrong = 0;
  for (unsigned r = 0; r < rows; ++r) {
    if (r % block.y == 0) {  // a line between block rows
      std::printf("       ");
      for (unsigned c = 0; c < cols; ++c) std::printf("%s", c % block.x == 0 ? "+--------" : "---------");
      std::printf("\n");
    }
    std::printf("row %-3u", r);
    for (unsigned c = 0; c < cols; ++c) {
      const Who& w = cells[r * cols + c];
      std::printf("%s%u,%u/%u,%u ", c % block.x == 0 ? "|" : " ", w.block_x, w.block_y, w.thread_x, w.thread_y);
      if (w.block_x * block.x + w.thread_x != c || w.block_y * block.y + w.thread_y != r) ++wrong;
    }
    std::printf("\n");
  }
  const unsigned expected_spare = unsigned(grid.volume() * block.volume()) - rows * cols;
  std::printf("\n%u threads fell outside the array and returned early (expected %u)\n", spare, expected_spare);
  if (wrong != 0 || spare != expected_spare) {
    std::printf("FAILED: %u elements were written by the wrong thread\n", wrong);
    return 1;
  }
  std::printf("PASSED: every element was written by the thread at block_idx * block_dim + thread_idx\n");
  return 0;
} catch (const devctx::Error& e) {
  std::fprintf(stderr, "devctx error (%s): %s\n", devctx::to_string(e.code()), e.what());
  return 2;
}
