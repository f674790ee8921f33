#pragma once
// Marks functions that run on the host and, under nvcc, on the device.
#if defined(__CUDACC__)
#define KPLACE_HOST_DEVICE __host__ __device__
#else
#define KPLACE_HOST_DEVICE
#endif
