import Resampling
import Testing

@Suite struct ResampleRecipeTests {
  @Test func emptyMeansHighQualityLinearPhaseWithOneDecibelOfHeadroom() throws {
    let recipe = try ResampleRecipe(parsing: "")
    #expect(recipe == ResampleRecipe())
    #expect(recipe.quality == .high && recipe.phase == .linear && !recipe.steepFilter)
    #expect(!recipe.onlyUnsupportedRates && !recipe.toHighestRate)
    #expect(abs(recipe.scale - 0.891_250_938) < 1e-8)  // 10^(-1/20)
  }

  @Test func lettersPickQualityPhaseFilterAndRateRule() throws {
    let recipe = try ResampleRecipe(parsing: "vMsE")
    #expect(recipe.quality == .veryHigh && recipe.phase == .minimum && recipe.steepFilter)
    #expect(recipe.onlyUnsupportedRates && !recipe.toHighestRate)
    #expect(try ResampleRecipe(parsing: "lIX").toHighestRate)
    #expect(try ResampleRecipe(parsing: "q").quality == .quick)
    #expect(try ResampleRecipe(parsing: "m").quality == .medium)
  }

  @Test func everyFieldOfSqueezelitesSyntax() throws {
    let recipe = try ResampleRecipe(parsing: "hL:18:3:28:91.3:104:45")
    #expect(recipe.flags == 0x18)
    #expect(recipe.attenuationDecibels == 3)
    #expect(abs(recipe.scale - 0.707_945_784) < 1e-8)
    #expect(recipe.precisionBits == 28)
    #expect(recipe.passbandEndPercent == 91.3 && recipe.stopbandBeginPercent == 104)
    #expect(recipe.phaseResponse == 45)
    // Empty fields keep their defaults.
    let sparse = try ResampleRecipe(parsing: "::0")
    #expect(sparse.quality == .high && sparse.attenuationDecibels == 0 && sparse.scale == 1)
  }

  @Test(arguments: ["hz", "h:xyz", "h:0:-3", "h:0:1:0", "h:0:1:20:95:90", "h:0:1:20:95:99:101", "a:b:c:d:e:f:g:h"])
  func badRecipesAreRefusedWithAReason(_ text: String) {
    #expect(throws: RecipeError.self) { try ResampleRecipe(parsing: text) }
  }
}

@Suite struct OutputRateChoiceTests {
  let card = [192_000, 176_400, 96000, 88200, 48000, 44100]

  @Test func byDefaultTheHighestSyncRate() {
    let recipe = ResampleRecipe()
    #expect(OutputRateChoice.rate(for: 44100, supported: card, recipe: recipe) == 176_400)
    #expect(OutputRateChoice.rate(for: 48000, supported: card, recipe: recipe) == 192_000)
    #expect(OutputRateChoice.rate(for: 96000, supported: card, recipe: recipe) == 192_000)
    // A divisor counts too: 352.8 kHz onto a card that stops at 176.4 kHz.
    #expect(OutputRateChoice.rate(for: 352_800, supported: card, recipe: recipe) == 176_400)
    // No sync rate at all: the highest.
    #expect(OutputRateChoice.rate(for: 44100, supported: [96000, 48000], recipe: recipe) == 96000)
  }

  @Test func exceptionKeepsSupportedRatesAndElseTakesTheLowestMultiple() throws {
    let recipe = try ResampleRecipe(parsing: "E")
    #expect(OutputRateChoice.rate(for: 44100, supported: card, recipe: recipe) == 44100)
    #expect(OutputRateChoice.rate(for: 32000, supported: [192_000, 96000, 48000], recipe: recipe) == 96000)
    #expect(OutputRateChoice.rate(for: 22050, supported: card, recipe: recipe) == 44100)
    // Neither: the default rule.
    #expect(OutputRateChoice.rate(for: 44100, supported: [96000, 48000], recipe: recipe) == 96000)
  }

  @Test func asyncTakesTheHighestRate() throws {
    let recipe = try ResampleRecipe(parsing: "X")
    #expect(OutputRateChoice.rate(for: 44100, supported: card, recipe: recipe) == 192_000)
    #expect(OutputRateChoice.rate(for: 44100, supported: [48000], recipe: recipe) == 48000)
    let both = try ResampleRecipe(parsing: "EX")
    #expect(OutputRateChoice.rate(for: 44100, supported: card, recipe: both) == 44100)
    #expect(OutputRateChoice.rate(for: 32000, supported: [48000, 44100], recipe: both) == 48000)
  }
}
