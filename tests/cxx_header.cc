// <omalloc.h> in C++ beside a C library that declares C23's sized frees
// itself.  glibc 2.36 does not; the two declarations below are written as
// glibc writes free's (__THROW: noexcept, or throw() before C++11), and
// omalloc.h's must agree with them.  Built as C++17 and as C++98.
#include <cstdlib>

__BEGIN_DECLS
extern void free_sized(void *__ptr, size_t __size) __THROW;
extern void free_aligned_sized(void *__ptr, size_t __alignment,
    size_t __size) __THROW;
__END_DECLS

#include <omalloc.h>

int
main()
{
	void *p = std::malloc(40);
	void *q = std::calloc(3, 700);

	if (p == NULL || q == NULL)
		return 1;
	free_sized(p, 40);
	free_sized(q, 2100);
	if (posix_memalign(&p, 256, 100) != 0)
		return 1;
	free_aligned_sized(p, 256, 100);
	return 0;
}
