/* The lazily bound link of libopapi_nn.so to libopapi_math.so.
 * swcannMathVersion is left undefined at link time and libopapi_nn.so has no
 * DT_NEEDED on the math library: dlopen(RTLD_NOW) of libopapi_nn.so fails
 * with "undefined symbol: swcannMathVersion" unless the math library is
 * already loaded RTLD_GLOBAL, while dlopen(RTLD_LAZY) succeeds and the symbol
 * is bound at the first call -- the loading rules torch_npu and op-plugin
 * live by (acl_abi.md 1.8). */
#define SWC_NN_API __attribute__((visibility("default")))

const char *swcannMathVersion(void); /* libopapi_math.so, bound lazily */

SWC_NN_API const char *swcannNnMathVersion(void) { return swcannMathVersion(); }
