// --memory-report=PLAN.html: the memory plan drawn as one self-contained page
// (inline SVG, no script, no link to anything), a block per planned buffer
// coloured by category, the recomputed one hatched, the budget and the peak
// as lines. python/tests/test_memory_report_html.py opens such a page in
// headless Chromium and checks the screenshot.

// RUN: weft-compile %S/Inputs/wide.mlir --entry forward --train --remat=budget --memory-budget=190000 --memory-report=%t.html -o /dev/null
// RUN: FileCheck %s < %t.html
// RUN: FileCheck %s --check-prefix=NONE-EXTERNAL < %t.html

// CHECK: <!DOCTYPE html>
// CHECK: <h1>Memory plan of @forward_step</h1>
// CHECK: <tr><th>planned peak</th><td>164.25 KiB</td></tr><tr><th>budget</th><td>185.55 KiB</td></tr>
// CHECK: <tr><th>recomputed ops</th><td>1</td></tr>
// CHECK: <svg xmlns="http://www.w3.org/2000/svg"
// Layer 0's h0 = linear(x, w0) is the one recomputed: its clone's 32 KiB
// result is drawn, and hatched.
// CHECK: <rect class="temporaries" {{.*}}<title>%{{[0-9]+}} = weft.linear (layer 0): temporaries, 32.00 KiB at {{.*}}, recomputed</title></rect><rect class="recomputed" {{.*}} fill="url(#recompute)"/>
// CHECK: <line id="peak" {{.*}} stroke="#222222"
// CHECK: planned peak 164.25 KiB
// CHECK: <line id="budget" {{.*}} stroke="#e8000b" stroke-width="3" stroke-dasharray="12 6"/>
// CHECK: budget 185.55 KiB
// CHECK: </svg>

// NONE-EXTERNAL-NOT: <script
// NONE-EXTERNAL-NOT: <link
// NONE-EXTERNAL-NOT: src=
// NONE-EXTERNAL-NOT: href=
// NONE-EXTERNAL: </html>

// Without a budget there is no budget line.
// RUN: weft-compile %S/Inputs/wide.mlir --entry forward --train --memory-report=%t.nobudget.html -o /dev/null
// RUN: FileCheck %s --check-prefix=NOBUDGET < %t.nobudget.html
// NOBUDGET: <tr><th>budget</th><td>none</td></tr>
// NOBUDGET: <line id="peak"
// NOBUDGET-NOT: id="budget"
// NOBUDGET: </html>

// An unwritable path is an error naming it.
// RUN: not weft-compile %S/Inputs/wide.mlir --entry forward --train --memory-report=%t.missing/dir/plan.html -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNWRITABLE
// UNWRITABLE: plan.html
