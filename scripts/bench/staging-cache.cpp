// Does staging through pinned chunks small enough to stay in cache save memory bandwidth (issue 15)?
//
// The job reads a batch's pages (about 12 MiB) into pinned staging by pread, then the GPU copies them out
// by DMA; it copies the output (2/3 of the input for fused then avgpool3d) back into pinned memory by DMA,
// then write()s it into new tmpfs files. With buffers larger than the cache, every byte crosses memory
// once more than a reader whose DMA finds the bytes still in cache. This program moves the same bytes the
// same way with pinned chunks of CHUNK bytes in a ring of SLOTS, from THREADS threads (one input file
// each), and prints GB/s and host CPU seconds per GB, so batch-sized and cache-sized chunks compare:
//
//   in      pread a chunk into a pinned slot, copy it to the device (async, a slot reused once its copy ends)
//   out     copy a chunk (2/3 the size) from the device into a pinned slot, write() it to a new file
//   mixed   both at each step, as the job does
//
// GB/s and CPU per GB are per GB of input (out: of the input whose 2/3 is written). Pinned slots are
// allocated once, before any timing.
//
// Host code on the CUDA runtime, no kernels (so no .fatbin beside it). Build and run on the GPU machine:
//   nvcc -O2 -std=c++17 -o /tmp/staging-cache scripts/bench/staging-cache.cpp && /tmp/staging-cache /dev/shm/sc 16 512 16
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                                          \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

static double cpu_seconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

struct Worker {
  std::string in_path, out_path;
  size_t size;
  unsigned char* dev;
  cudaStream_t stream;
  // pinned slots, allocated once (outside the timed runs): MAX_SLOTS of the largest chunk each way
  std::vector<unsigned char*> pin_in, pin_out;
  std::vector<cudaEvent_t> ev_in, ev_out;
};

static const int MAX_SLOTS = 4;
static const size_t MAX_CHUNK = 12u << 20;

static void pread_all(int fd, void* buf, size_t n, off_t off) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, (char*)buf + done, n - done, off + done);
    if (r <= 0) {
      perror("pread");
      exit(1);
    }
    done += r;
  }
}

static void write_all(int fd, const void* buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = write(fd, (const char*)buf + done, n - done);
    if (r <= 0) {
      perror("write");
      exit(1);
    }
    done += r;
  }
}

// one thread's run: mode 1 = in, 2 = out, 3 = mixed
static void work(Worker& w, int mode, size_t chunk, int slots) {
  size_t och = chunk * 2 / 3;
  std::vector<unsigned char*>& pin_in = w.pin_in;
  std::vector<unsigned char*>& pin_out = w.pin_out;
  std::vector<cudaEvent_t>& ev_in = w.ev_in;
  std::vector<cudaEvent_t>& ev_out = w.ev_out;
  int in_fd = open(w.in_path.c_str(), O_RDONLY);
  int out_fd = open(w.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (in_fd < 0 || out_fd < 0) {
    perror("open");
    exit(1);
  }
  size_t steps = w.size / chunk;
  std::vector<bool> in_used(slots, false);
  for (size_t i = 0; i <= steps; i++) {
    int s = i % slots;
    if ((mode & 1) && i < steps) {
      if (in_used[s]) CK(cudaEventSynchronize(ev_in[s]));
      pread_all(in_fd, pin_in[s], chunk, (off_t)(i * chunk));
      CK(cudaMemcpyAsync(w.dev + i * chunk, pin_in[s], chunk, cudaMemcpyHostToDevice, w.stream));
      CK(cudaEventRecord(ev_in[s], w.stream));
      in_used[s] = true;
    }
    if (mode & 2) {
      // the device-to-host copy of step i is issued before step i-1's bytes are written
      if (i < steps) {
        CK(cudaMemcpyAsync(pin_out[s], w.dev + i * chunk, och, cudaMemcpyDeviceToHost, w.stream));
        CK(cudaEventRecord(ev_out[s], w.stream));
      }
      if (i >= 1) {
        int p = (i - 1) % slots;
        CK(cudaEventSynchronize(ev_out[p]));
        write_all(out_fd, pin_out[p], och);
      }
    }
  }
  CK(cudaStreamSynchronize(w.stream));
  close(in_fd);
  close(out_fd);
  unlink(w.out_path.c_str());
}

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: staging-cache DIR FILES MIB THREADS\n");
    return 2;
  }
  std::string dir = argv[1];
  int files = atoi(argv[2]);
  size_t size = (size_t)atoi(argv[3]) << 20;
  int threads = atoi(argv[4]);
  mkdir(dir.c_str(), 0755);
  std::vector<Worker> ws(files);
  {
    std::vector<unsigned char> block(size);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < size; i += 8) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      memcpy(&block[i], &x, 8);
    }
    for (int f = 0; f < files; f++) {
      ws[f].in_path = dir + "/in-" + std::to_string(f);
      ws[f].out_path = dir + "/out-" + std::to_string(f);
      ws[f].size = size;
      int fd = open(ws[f].in_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      write_all(fd, block.data(), size);
      close(fd);
      CK(cudaMalloc((void**)&ws[f].dev, size));
      CK(cudaStreamCreateWithFlags(&ws[f].stream, cudaStreamNonBlocking));
      ws[f].pin_in.resize(MAX_SLOTS);
      ws[f].pin_out.resize(MAX_SLOTS);
      ws[f].ev_in.resize(MAX_SLOTS);
      ws[f].ev_out.resize(MAX_SLOTS);
      for (int s = 0; s < MAX_SLOTS; s++) {
        CK(cudaHostAlloc((void**)&ws[f].pin_in[s], MAX_CHUNK, cudaHostAllocDefault));
        CK(cudaHostAlloc((void**)&ws[f].pin_out[s], MAX_CHUNK, cudaHostAllocDefault));
        memset(ws[f].pin_in[s], 0, MAX_CHUNK);
        memset(ws[f].pin_out[s], 0, MAX_CHUNK);
        CK(cudaEventCreateWithFlags(&ws[f].ev_in[s], cudaEventDisableTiming));
        CK(cudaEventCreateWithFlags(&ws[f].ev_out[s], cudaEventDisableTiming));
      }
    }
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%d files of %zu MiB in %s; %s; %u cores; L2 of the GPU %d MiB\n", files, size >> 20, dir.c_str(), prop.name,
         std::thread::hardware_concurrency(), prop.l2CacheSize >> 20);
  fflush(stdout);
  struct Way {
    const char* name;
    size_t chunk;
    int slots;
  };
  const Way ways[] = {{"12 MiB x 2 (a batch)", 12u << 20, 2}, {"1 MiB x 4", 1u << 20, 4}, {"256 KiB x 4", 256u << 10, 4}};
  const char* modes[] = {"", "in", "out", "mixed"};
  for (int mode : {1, 2, 3}) {
    for (int round = 0; round < 3; round++) {
      for (const Way& way : ways) {
        for (int t : {1, threads}) {
          int n = t < files ? t : files;
          double c0 = cpu_seconds();
          auto w0 = std::chrono::steady_clock::now();
          std::vector<std::thread> th;
          for (int k = 0; k < n; k++) th.emplace_back(work, std::ref(ws[k]), mode, way.chunk, way.slots);
          for (auto& x : th) x.join();
          double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
          double cpu = cpu_seconds() - c0;
          double gb = (double)n * (size / way.chunk) * way.chunk / 1e9;  // input bytes (out: the device bytes read)
          printf("round %d %-5s %-21s %2d thread(s): %.2f GB in %.3f s = %6.2f GB/s in, host CPU %.3f core-s per GB in\n",
                 round, modes[mode], way.name, n, gb, wall, gb / wall, cpu / gb);
          fflush(stdout);
        }
      }
    }
  }
  for (auto& w : ws) unlink(w.in_path.c_str());
  rmdir(dir.c_str());
  return 0;
}
