/* libopapi_math.so stand-in: the ops-math operator library.  None of the five
 * pooling ops live here; it exists so that libopapi_nn.so has what a
 * stand-alone ops-nn build has -- a symbol it takes from the math library
 * without a DT_NEEDED on it, resolved lazily from the global scope
 * (acl_abi.md 1.3, 1.8). */
#define SWC_MATH_API __attribute__((visibility("default")))

SWC_MATH_API const char *swcannMathVersion(void)
{
    return "swcann opapi_math (software CANN \xe2\x80\x94 simulated, NOT hardware)";
}
