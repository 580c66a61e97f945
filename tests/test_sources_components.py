"""Vue and Svelte single-file components: their scripts parsed as code, at their own lines."""

from smartcontext import Workspace
from smartcontext.sources.components import ComponentSource, script_view
from smartcontext.sources.discover import classify

from conftest import write_tree

CART = """
<template>
  <div class="cart-summary">
    <p>{{ itemCount }} items, total {{ formattedTotal }}</p>
    <button @click="checkout">Checkout</button>
  </div>
</template>

<script setup lang="ts">
import { computed } from 'vue'
import { formatPrice } from '../utils/money'

const props = defineProps<{ items: { price: number }[] }>()

function totalPrice(items: { price: number }[]): number {
  return items.reduce((sum, item) => sum + item.price, 0)
}

const formattedTotal = computed(() => formatPrice(totalPrice(props.items)))
</script>

<style scoped>
.cart-summary { display: flex; }
</style>
"""

APP = """
<script context="module">
  export const prerender = true;
</script>

<script>
  import CartSummary from './components/CartSummary.vue';
  let items = [];
  function addItem(price) {
    items = [...items, { price }];
  }
</script>

<main>
  <h1>Shop window</h1>
  <button on:click={() => addItem(100)}>Add</button>
</main>
"""


def test_the_script_view_keeps_lines_and_blanks_the_rest():
    language, view = script_view(CART.lstrip("\n"))
    assert language == "typescript"
    lines, original = view.split("\n"), CART.lstrip("\n").split("\n")
    assert len(lines) == len(original)
    assert lines[13] == original[13] == "function totalPrice(items: { price: number }[]): number {"
    assert not lines[1].strip() and "cart-summary" not in view
    assert script_view("<template><p>hi</p></template>\n") == ("javascript", " " * 30 + "\n")


def test_definitions_keep_their_lines_and_the_file_row_holds_the_template():
    parsed = ComponentSource().parse("src/components/Cart.vue", CART.lstrip("\n").encode(), "vue")
    by_name = {it.name: it for it in parsed.items}
    total = by_name["totalPrice"]
    assert (total.start_line, total.end_line, total.language) == (14, 16, "typescript")
    module = next(it for it in parsed.items if it.traits.whole_file)
    assert "<button @click=\"checkout\">" in module.text and module.end_line == 23
    assert parsed.language == "vue"
    assert {e.dst_name for e in parsed.edges if e.kind == "imports"} >= {"vue", "src.utils.money"}


def test_a_svelte_component_and_its_import_of_a_vue_file(tmp_path):
    assert classify("src/App.svelte") == ("component", "svelte")
    assert classify("src/Cart.VUE") == ("component", "vue")
    write_tree(tmp_path, {"src/components/CartSummary.vue": CART, "src/App.svelte": APP,
                          "src/utils/money.ts": "export function formatPrice(cents: number): string {\n"
                                                "  return `$${(cents / 100).toFixed(2)}`\n}\n"})
    with Workspace.open(tmp_path) as ws:
        ws.index(embeddings=False)
        res = ws.context("How is the cart total computed?", max_tokens=800)
        assert res.files[0] == "src/components/CartSummary.vue"
        assert "return items.reduce((sum, item) => sum + item.price, 0)" in res.text
        app = ws.context("addItem", max_tokens=400)
        assert app.files[0] == "src/App.svelte" and "items = [...items, { price }];" in app.text
        # The import, resolved to the component's module (not a module "CartSummary.vue").
        assert "@ src.components.CartSummary\n" in app.text
        assert ws.search("Shop window", mode="keyword")[0].path == "src/App.svelte"


def test_a_component_whose_script_cannot_be_read_is_text_as_written(monkeypatch):
    from smartcontext.sources import code

    monkeypatch.setattr(code, "spec_for", lambda *a: None)  # no grammar for the script
    parsed = ComponentSource().parse("src/Cart.vue", CART.lstrip("\n").encode(), "vue")
    assert [it.kind for it in parsed.items] == ["text"]
    assert "<button @click=\"checkout\">" in parsed.items[0].text and parsed.warnings
